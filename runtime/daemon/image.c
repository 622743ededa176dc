/* SPDX-License-Identifier: MIT */
/*
 * Which images a member may name (POST /v1/sessions' "image"): cordond makes their containers
 * with its own (root's) Docker access, and a container shows its image's files, those of
 * layers that are root's alone on the host included (an image with credentials baked in is
 * read by anyone who can run it: the docker group is root-equivalent for this reason). So a
 * member may use only the images the administrator allowed: those given with --docker-image
 * (--daytona-image for Daytona, whose sandboxes are made with cordond's account), and the image
 * of the profile the request names, which the administrator set in its file. Root may name any.
 *
 * A reference is matched after normalising what Docker itself treats as the same name
 * (`busybox`, `library/busybox`, `docker.io/library/busybox:latest` are one), and never beyond
 * that: an image ID or a digest matches only the same ID or digest as written. What is sent to
 * dockerd is then the allowed string as the administrator wrote it, never the member's
 * spelling of it: a short string dockerd could read as an ID prefix as well as a name resolves
 * the way it does for the administrator. docs/daemon.md, "Images", has the decisions.
 */
#define _GNU_SOURCE
#include "runtime/daemon/daemon.h"
#include "runtime/cleanup.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_MAX 255 /* as the body's image field (body.c) */

/* Docker Hub's own names: what a reference without a registry means. */
#define HUB "docker.io"

/*
 * Whether the first component of a name is a registry (Docker's rule: it has a '.' or a ':',
 * or is localhost) rather than the first component of a Hub repository.
 */
static bool is_registry(const char *s, size_t n)
{
	return memchr(s, '.', n) || memchr(s, ':', n) || (n == 9 && !memcmp(s, "localhost", 9));
}

int image_normalize(const char *ref, char **ret, cordon_error *e)
{
	const char *at, *name_end, *slash, *colon, *tag = NULL, *digest = NULL;
	const char *reg = HUB, *path;
	size_t reg_n = strlen(HUB), path_n, tag_n = 0;
	bool library;
	char *out;

	if (!*ref || strlen(ref) > IMAGE_MAX)
		goto bad;
	for (const char *p = ref; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.:/@-", *p))
			goto bad;
	/*
	 * An image ID (sha256:HEX, or the 64 hex digits alone, as dockerd reads them): itself,
	 * spelled sha256:HEX. Matched only by the same ID.
	 */
	if (!strncmp(ref, "sha256:", 7) ||
	    (strlen(ref) == 64 && strspn(ref, "0123456789abcdef") == 64)) {
		const char *hex = ref[6] == ':' ? ref + 7 : ref;

		if (!*hex || strspn(hex, "0123456789abcdef") != strlen(hex))
			goto bad;
		if (asprintf(&out, "sha256:%s", hex) < 0)
			return cordon_err(e, ENOMEM, "out of memory");
		*ret = out;
		return 0;
	}
	at = strchr(ref, '@');
	name_end = at ? at : ref + strlen(ref);
	if (at) {
		/* algorithm:hex, kept as written */
		digest = at;
		colon = strchr(at + 1, ':');
		if (!colon || colon == at + 1 || !colon[1] || strchr(colon + 1, ':') ||
		    strchr(at + 1, '/') || strchr(at + 1, '@'))
			goto bad;
	}
	/* The tag: after the last ':' that follows the last '/' (a registry's port precedes it). */
	slash = memrchr(ref, '/', (size_t)(name_end - ref));
	colon = memrchr(slash ? slash : ref, ':', (size_t)(name_end - (slash ? slash : ref)));
	if (colon) {
		tag = colon + 1;
		tag_n = (size_t)(name_end - tag);
		if (!tag_n || memchr(tag, '.', 1) || memchr(tag, '-', 1))
			goto bad;
		name_end = colon;
	}
	if (name_end == ref || *ref == '/' || name_end[-1] == '/')
		goto bad;
	for (const char *p = ref; p < name_end - 1; p++)
		if (p[0] == '/' && p[1] == '/')
			goto bad;
	path = ref;
	slash = memchr(ref, '/', (size_t)(name_end - ref));
	if (slash && is_registry(ref, (size_t)(slash - ref))) {
		reg = ref;
		reg_n = (size_t)(slash - ref);
		path = slash + 1;
		if (reg_n == 15 && !memcmp(reg, "index.docker.io", 15)) {
			reg = HUB;
			reg_n = strlen(HUB);
		}
	}
	path_n = (size_t)(name_end - path);
	if (memchr(path, ':', path_n))
		goto bad; /* a ':' in the repository's path that is not its tag */
	library = reg_n == strlen(HUB) && !memcmp(reg, HUB, reg_n) && !memchr(path, '/', path_n);
	/* registry/[library/]path, then :tag (:latest without a tag or a digest), then @digest */
	if (asprintf(&out, "%.*s/%s%.*s%s%.*s%s", (int)reg_n, reg, library ? "library/" : "",
		     (int)path_n, path, tag || !digest ? ":" : "",
		     tag      ? (int)tag_n
		     : digest ? 0
			      : 6,
		     tag ? tag : "latest", digest ? digest : "") < 0)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret = out;
	return 0;
bad:
	return cordon_err(e, 0, "'%.64s' is not an image reference", ref);
}

/*
 * Whether asked names the same image as allowed (both normalised). A malformed allowed (a
 * profile's, which the profile parser does not judge as a reference) matches nothing.
 */
static bool image_same(const char *asked_norm, const char *allowed)
{
	_cleanup_free_ char *n = NULL;
	cordon_error e;

	return allowed && image_normalize(allowed, &n, &e) == 0 && !strcmp(n, asked_norm);
}

const char *image_for_member(const char *asked, const char *profile_image,
			     const struct cordon_list *allowed)
{
	_cleanup_free_ char *norm = NULL;
	cordon_error e;

	if (image_normalize(asked, &norm, &e) < 0)
		return NULL;
	if (image_same(norm, profile_image))
		return profile_image;
	for (size_t i = 0; i < allowed->n; i++)
		if (image_same(norm, allowed->v[i]))
			return allowed->v[i];
	return NULL;
}
