/* SPDX-License-Identifier: MIT */
/* cordon_error: a fixed-size error value, safe to fill in a forked child. */
#include <cordon/cordon.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cordon_err(cordon_error *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	e->code = code;
	va_start(ap, fmt);
	(void)vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int cordon_err_prefix(cordon_error *e, const char *ctx)
{
	/* Room for both, then cut to the fixed size: a long context must not lose the cause. */
	char tmp[sizeof(e->msg) * 2];

	if (!e)
		return -1;
	(void)snprintf(tmp, sizeof(tmp), "%s: %s", ctx, e->msg);
	memcpy(e->msg, tmp, sizeof(e->msg) - 1);
	e->msg[sizeof(e->msg) - 1] = '\0';
	return -1;
}

const char *cordon_err_str(const cordon_error *e, char *buf, size_t n)
{
	if (e->code > 0)
		(void)snprintf(buf, n, "%s: %s", e->msg, strerror(e->code));
	else
		(void)snprintf(buf, n, "%s", e->msg);
	return buf;
}
