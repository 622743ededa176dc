/* SPDX-License-Identifier: MIT */
/* Python's str() of numbers, for the texts AG2 prints with one in them (a timeout). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Python's str() (and repr()) of a float: "1.0", "0.5", "1e-05", "inf". */
void pynum_float_repr(double v, char *buf, size_t n);
/*
 * Python's str() of the number a plain decimal text denotes, which is how AG2 prints the
 * timeout it was given: digits alone are an int ("007" → "7"), digits, '.' and digits a float
 * ("1.50" → "1.5", "2.0" → "2.0", "0.00001" → "1e-05"). False, buf untouched, for any other
 * text (not plain decimal, or too long for buf): the caller shows it as it is.
 */
bool pynum_decimal_str(const char *text, char *buf, size_t n);
