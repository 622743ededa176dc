/* SPDX-License-Identifier: MIT */
/* runtime/sha256.c against FIPS 180-4's examples and RFC 4231's HMAC-SHA256 cases. */
#include "runtime/sha256.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hex(const unsigned char *d, char out[2 * SHA256_DIGEST_SIZE + 1])
{
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		(void)sprintf(out + 2 * i, "%02x", d[i]);
}

/* The digest of buf fed step bytes at a time (0: in one call). */
static void digest(const void *buf, size_t n, size_t step, char out[2 * SHA256_DIGEST_SIZE + 1])
{
	unsigned char d[SHA256_DIGEST_SIZE];
	struct sha256 s;

	sha256_init(&s);
	if (!step)
		sha256_update(&s, buf, n);
	for (size_t i = 0; step && i < n; i += step)
		sha256_update(&s, (const char *)buf + i, n - i < step ? n - i : step);
	sha256_final(&s, d);
	hex(d, out);
}

Test(sha256, fips_examples_whole_and_in_pieces)
{
	static const struct {
		const char *msg, *want;
	} cases[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		/* 56 bytes: the padding needs a second block */
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char got[65];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t step = 0; step <= 7; step++) {
			digest(cases[i].msg, strlen(cases[i].msg), step, got);
			cr_assert_str_eq(got, cases[i].want, "'%s' in pieces of %zu", cases[i].msg,
					 step);
		}
}

Test(sha256, a_million_a_and_binary_bytes)
{
	unsigned char bin[768];
	char *a = malloc(1000000), got[65];

	cr_assert_not_null(a);
	memset(a, 'a', 1000000);
	digest(a, 1000000, 0, got);
	cr_assert_str_eq(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	digest(a, 1000000, 4093, got);
	cr_assert_str_eq(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)i;
	digest(bin, sizeof(bin), 63, got);
	cr_assert_str_eq(got, "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
}

Test(sha256, hmac_rfc4231)
{
	unsigned char key[131], d[SHA256_DIGEST_SIZE];
	const char *big = "Test Using Larger Than Block-Size Key - Hash Key First";
	char got[65];

	memset(key, 0x0b, 20);
	sha256_hmac(key, 20, "Hi There", 8, d);
	hex(d, got);
	cr_assert_str_eq(got, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	sha256_hmac("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, got);
	cr_assert_str_eq(got, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	/* a key longer than a block is hashed first; one of exactly a block is not */
	memset(key, 0xaa, sizeof(key));
	sha256_hmac(key, 131, big, strlen(big), d);
	hex(d, got);
	cr_assert_str_eq(got, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	sha256_hmac(key, 64, "x", 1, d);
	hex(d, got);
	cr_assert_str_eq(got, "ce3c639dcb9d8baae5d44c3b8b5e233faab4d1860e07489af5c84f213998bd79");
}
