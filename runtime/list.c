/* SPDX-License-Identifier: MIT */
/* struct cordon_list: a NULL-terminated string vector that remembers whether it was given. */
#include <cordon/cordon.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cordon_list_add(struct cordon_list *l, const char *s, cordon_error *e)
{
	char **v;
	char *dup;

	dup = strdup(s);
	if (!dup)
		return cordon_err(e, ENOMEM, "out of memory");
	v = realloc(l->v, (l->n + 2) * sizeof(*v));
	if (!v) {
		free(dup);
		return cordon_err(e, ENOMEM, "out of memory");
	}
	v[l->n++] = dup;
	v[l->n] = NULL;
	l->v = v;
	l->set = true;
	return 0;
}

void cordon_list_clear(struct cordon_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void cordon_list_free(struct cordon_list *l)
{
	cordon_list_clear(l);
	l->set = false;
}

int cordon_list_copy(struct cordon_list *dst, const struct cordon_list *src, cordon_error *e)
{
	struct cordon_list tmp = { 0 };

	for (size_t i = 0; i < src->n; i++)
		if (cordon_list_add(&tmp, src->v[i], e) < 0) {
			cordon_list_free(&tmp);
			return -1;
		}
	tmp.set = src->set;
	cordon_list_free(dst);
	*dst = tmp;
	return 0;
}
