/* SPDX-License-Identifier: MIT */
/* The former resolve_host(), an oracle for the tests (ref_resolve.c). */
#pragma once

#include <cordon/cordon.h>

int ref_resolve_host(const char *workdir, const char *token, char **ret_abs, cordon_error *e);
