/* SPDX-License-Identifier: MIT */
/* Room for one more element in a growing array (the hide list, its records, pattern sets). */
#pragma once

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cordon/cordon.h>

/*
 * Make room for element n of the array *pp (pp: the address of the array's pointer; *capp
 * elements allocated): when it is full, it doubles, or starts at first. 0, or -1 with ENOMEM
 * in e and the array as it was. A macro so that the element's size comes from pp's type.
 */
#define array_grow(pp, n, capp, first, e)                                                          \
	array_grow_((pp), (n), (capp), sizeof(**(pp)), (first), (e))

static inline int array_grow_(void *vp, size_t n, size_t *capp, size_t size, size_t first,
			      cordon_error *e)
{
	size_t cap = *capp ? 2 * *capp : first;
	void *old, *v;

	if (n < *capp)
		return 0;
	if (*capp > SIZE_MAX / 2 / size)
		return cordon_err(e, ENOMEM, "out of memory");
	memcpy(&old, vp, sizeof(old));
	v = reallocarray(old, cap, size);
	if (!v)
		return cordon_err(e, ENOMEM, "out of memory");
	memcpy(vp, &v, sizeof(v));
	*capp = cap;
	return 0;
}
