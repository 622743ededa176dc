/* SPDX-License-Identifier: MIT */
#include "backends/backend.h"

#include <string.h>

static const struct cordon_backend_ops *const backends[] = {
	&backend_local,
	&backend_docker,
};

const struct cordon_backend_ops *backend_lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}
