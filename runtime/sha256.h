/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), small and dependency-free: for identifiers
 * that must not be sent as they are (backends/orphan.c hashes the machine and boot ids,
 * as machine-id(5) asks), not for anything a secret's strength rests on. The static CLI links
 * no crypto library (the Makefile's CLI_PKGS), and this needs none.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_BLOCK_SIZE 64

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes fed so far */
	unsigned char buf[SHA256_BLOCK_SIZE];
	size_t n; /* bytes of buf in use */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t n);
/* The digest of everything fed; s must be initialised again before more use. */
void sha256_final(struct sha256 *s, unsigned char ret[SHA256_DIGEST_SIZE]);

/* HMAC-SHA256 of msg under key (any length: a key longer than a block is hashed first). */
void sha256_hmac(const void *key, size_t key_len, const void *msg, size_t msg_len,
		 unsigned char ret[SHA256_DIGEST_SIZE]);
