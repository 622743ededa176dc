/* SPDX-License-Identifier: MIT */
/*
 * Python's str() of numbers. AG2 formats its timeout message with an f-string,
 * f"Command timed out after {timeout}s", so what it prints is str() of the int or float it was
 * given, not the digits its caller typed: `timeout=1.50` prints "1.5s".
 */
#define _GNU_SOURCE
#include "runtime/pynum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pynum_float_repr(double v, char *buf, size_t n)
{
	char digits[32], tmp[64];
	int prec, exp10, nd = 0;

	if (!isfinite(v)) {
		snprintf(buf, n, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
		return;
	}
	/* Python's repr: the shortest digit string that reads back as the same double. */
	for (prec = 0; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*e", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*e", prec, v);
	{
		const char *p = tmp, *ep = strchr(tmp, 'e');

		if (*p == '-')
			p++;
		for (; p < ep; p++)
			if (*p >= '0' && *p <= '9')
				digits[nd++] = *p;
		digits[nd] = '\0';
		exp10 = atoi(ep + 1);
	}
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = '\0';
	int decpt = exp10 + 1; /* digits d1d2... mean 0.d1d2... * 10^decpt */
	const char *sign = v < 0 ? "-" : "";

	if (decpt > -4 && decpt <= 16) {
		char out[64];
		size_t o = 0;

		if (decpt <= 0) {
			out[o++] = '0';
			out[o++] = '.';
			for (int i = 0; i < -decpt; i++)
				out[o++] = '0';
			for (int i = 0; i < nd; i++)
				out[o++] = digits[i];
		} else {
			for (int i = 0; i < decpt; i++)
				out[o++] = i < nd ? digits[i] : '0';
			out[o++] = '.';
			if (nd > decpt)
				for (int i = decpt; i < nd; i++)
					out[o++] = digits[i];
			else
				out[o++] = '0';
		}
		out[o] = '\0';
		snprintf(buf, n, "%s%s", sign, out);
	} else {
		int e10 = decpt - 1;

		if (nd > 1)
			snprintf(buf, n, "%s%c.%se%c%02d", sign, digits[0], digits + 1,
				 e10 < 0 ? '-' : '+', abs(e10));
		else
			snprintf(buf, n, "%s%ce%c%02d", sign, digits[0], e10 < 0 ? '-' : '+',
				 abs(e10));
	}
}

bool pynum_decimal_str(const char *text, char *buf, size_t n)
{
	size_t ints = strspn(text, "0123456789"), frac = 0;

	if (ints == 0)
		return false;
	if (text[ints] == '.')
		frac = strspn(text + ints + 1, "0123456789");
	if (text[ints] == '\0') {
		/* int(text): no leading zeros, "0" for zero. */
		const char *p = text + strspn(text, "0");

		if (!*p)
			p = "0";
		if (strlen(p) >= n)
			return false;
		memcpy(buf, p, strlen(p) + 1);
		return true;
	}
	if (frac == 0 || text[ints + 1 + frac] != '\0')
		return false;
	/* float(text): the double nearest to it (strtod, like Python's), then its repr. */
	pynum_float_repr(strtod(text, NULL), buf, n);
	return true;
}
