/* SPDX-License-Identifier: MIT */
/*
 * Streaming, bounded output capture and AG2's result string.
 *
 * AG2 builds its result as `(stdout_text + stderr_text).strip()`, truncated to max_output code
 * points, where each text is the whole stream decoded and newline-translated. cordon must give
 * the same string while holding only O(max_output) bytes, however much the command writes. The
 * observation that makes this possible: the final string is a window of at most max_output code
 * points of the concatenation, starting at the first non-whitespace code point. Which window it
 * is depends only on a few counters per stream:
 *
 *   total  code points in the stream (after CRLF/CR -> LF)
 *   lead   length of the leading whitespace run (== total while the stream is all whitespace)
 *   trail  length of the trailing whitespace run
 *
 * and its content comes from at most two places per stream: the code points right after the
 * leading whitespace (when the window starts in this stream) and the first code points of the
 * stream (when the window starts in stdout and runs on into stderr, stderr's own leading
 * whitespace included). So a capture keeps the first max_output code points of its leading
 * whitespace and the first max_output code points after it, and from then on only counts.
 *
 * The counting is the hot path (a command may write gigabytes that nobody will see), so once
 * the kept text is full, ASCII is consumed eight bytes at a time with plain 64-bit arithmetic
 * and only non-ASCII bytes and CRs go through the byte-wise decoder.
 */
#include "runtime/capture.h"
#include "runtime/pynum.h"

#include "policy/pyspace.h"
#include "runtime/cleanup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLACEMENT 0xFFFDu

/*
 * A UTF-8 decoder that replaces invalid input exactly like Python's
 * bytes.decode("utf-8", "replace"), i.e. the Unicode "maximal subpart" practice: a lead byte
 * fixes the range its next continuation byte may take (E0 needs A0..BF so overlong forms fail
 * at once, ED needs 80..9F so surrogates fail at once, F4 needs 80..8F to stay <= U+10FFFF).
 * When a byte does not fit, the bytes taken so far become one U+FFFD and that byte is decoded
 * afresh, so b"\xf0\x80" is two replacements and b"\xe2\x82" at the end is one.
 */
struct u8dec {
	uint32_t cp;
	uint8_t need; /* continuation bytes still expected; 0 = between characters */
	uint8_t lo, hi;
};

/* Feed one byte; writes 0, 1 or 2 code points to out[] and returns how many. */
static inline int u8dec_byte(struct u8dec *d, uint8_t b, uint32_t out[2])
{
	int n = 0;

	if (d->need) {
		if (b >= d->lo && b <= d->hi) {
			d->cp = (d->cp << 6) | (b & 0x3f);
			d->lo = 0x80;
			d->hi = 0xbf;
			if (--d->need == 0)
				out[n++] = d->cp;
			return n;
		}
		/* The sequence so far is a maximal subpart: one U+FFFD, then b starts anew. */
		d->need = 0;
		out[n++] = REPLACEMENT;
	}

	if (b < 0x80) {
		out[n++] = b;
		return n;
	}
	d->lo = 0x80;
	d->hi = 0xbf;
	if (b >= 0xc2 && b <= 0xdf) {
		d->need = 1;
		d->cp = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		d->need = 2;
		d->cp = b & 0x0f;
		if (b == 0xe0)
			d->lo = 0xa0; /* overlong below U+0800 */
		else if (b == 0xed)
			d->hi = 0x9f; /* UTF-16 surrogates */
	} else if (b >= 0xf0 && b <= 0xf4) {
		d->need = 3;
		d->cp = b & 0x07;
		if (b == 0xf0)
			d->lo = 0x90; /* overlong below U+10000 */
		else if (b == 0xf4)
			d->hi = 0x8f; /* above U+10FFFF */
	} else {
		/* 80..BF (stray continuation), C0/C1 (always overlong), F5..FF. */
		out[n++] = REPLACEMENT;
	}
	return n;
}

/* End of input: an unfinished sequence is one U+FFFD. */
static inline int u8dec_end(struct u8dec *d, uint32_t out[2])
{
	if (!d->need)
		return 0;
	d->need = 0;
	out[0] = REPLACEMENT;
	return 1;
}

static inline size_t u8_encode(uint32_t cp, char *s)
{
	if (cp < 0x80) {
		s[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		s[0] = (char)(0xc0 | (cp >> 6));
		s[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		s[0] = (char)(0xe0 | (cp >> 12));
		s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		s[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	s[0] = (char)(0xf0 | (cp >> 18));
	s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	s[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	s[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

struct capture {
	size_t max; /* max_output, in code points */

	struct u8dec dec;
	bool cr;     /* the last code point was a CR (already emitted as LF): drop a following LF */
	bool ended;  /* capture_end() ran */
	bool failed; /* an allocation failed: counting goes on, the text is lost */

	uint64_t bytes; /* raw bytes fed */
	uint64_t total; /* code points after newline translation */
	uint64_t lead;	/* leading whitespace code points */
	uint64_t trail; /* trailing whitespace code points */
	bool body;	/* a non-whitespace code point has been seen */
	bool flood;	/* the last chunk counted was plain ASCII throughout (count_body) */

	/*
	 * buf holds lead_kept code points of the leading whitespace (lead_bytes bytes), then
	 * body_kept code points from the first non-whitespace one on. Both are capped at max,
	 * so buf never holds more than 2 * max code points (8 * max bytes).
	 */
	char *buf;
	size_t len, cap;
	size_t lead_kept, lead_bytes;
	size_t body_kept;
};

int capture_new(int64_t max_output, struct capture **ret, cordon_error *e)
{
	struct capture *c;

	/* AG2 slices from the end for a negative max_output; profiles reject it (compat.md). */
	if (max_output < 0)
		return cordon_err(e, EINVAL, "max_output must be >= 0, not %" PRId64, max_output);
	if ((uint64_t)max_output > SIZE_MAX / 16)
		return cordon_err(e, EINVAL, "max_output %" PRId64 " is too large", max_output);
	c = calloc(1, sizeof(*c));
	if (!c)
		return cordon_err(e, ENOMEM, "out of memory");
	c->max = (size_t)max_output;
	*ret = c;
	return 0;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	free(c->buf);
	free(c);
}

size_t capture_memory(const struct capture *c)
{
	return sizeof(*c) + c->cap;
}

uint64_t capture_bytes(const struct capture *c)
{
	return c->bytes;
}

uint64_t capture_chars(const struct capture *c)
{
	return c->total;
}

/* Append one code point to the kept text. The buffer grows by doubling up to its bound. */
static void keep(struct capture *c, uint32_t cp)
{
	if (c->failed)
		return;
	if (c->cap - c->len < 4) {
		size_t bound = 8 * c->max + 8;
		size_t ncap = c->cap ? 2 * c->cap : 256;
		char *nbuf;

		if (ncap > bound)
			ncap = bound;
		nbuf = realloc(c->buf, ncap);
		if (!nbuf) {
			c->failed = true;
			return;
		}
		c->buf = nbuf;
		c->cap = ncap;
	}
	c->len += u8_encode(cp, c->buf + c->len);
}

/* One decoded, newline-translated code point. */
static inline void emit(struct capture *c, uint32_t cp)
{
	bool ws = py_space(cp);

	c->total++;
	c->trail = ws ? c->trail + 1 : 0;
	if (!c->body) {
		if (ws) {
			c->lead++;
			if (c->lead_kept < c->max) {
				keep(c, cp);
				c->lead_kept++;
				c->lead_bytes = c->len;
			}
			return;
		}
		c->body = true;
	}
	if (c->body_kept < c->max) {
		keep(c, cp);
		c->body_kept++;
	}
}

/*
 * Universal newlines, as Python's text mode applies them after decoding: "\r\n" and a lone
 * "\r" both become "\n". The CR is emitted as LF at once and a LF right after it is dropped, so
 * nothing waits for a lookahead byte and a CRLF split across reads still counts once.
 */
static inline void translate(struct capture *c, uint32_t cp)
{
	if (cp == '\n' && c->cr) {
		c->cr = false;
		return;
	}
	c->cr = cp == '\r';
	emit(c, c->cr ? '\n' : cp);
}

static inline void step(struct capture *c, uint8_t b)
{
	uint32_t cps[2];
	int n = u8dec_byte(&c->dec, b, cps);

	for (int i = 0; i < n; i++)
		translate(c, cps[i]);
}

/*
 * Byte-parallel arithmetic on eight ASCII bytes. With every byte < 0x80, x + (0x80 - k) sets a
 * byte's top bit exactly when that byte is >= k, and never carries into the next byte.
 */
#define ONES 0x0101010101010101ull
#define HIGH 0x8080808080808080ull
#define GE(w, k) (((w) + (0x80 - (k)) * ONES) & HIGH)

/* Top bit set in every byte that is ASCII whitespace: 09..0D, 1C..20. */
static inline uint64_t ascii_space_mask(uint64_t w)
{
	return (GE(w, 0x09) & ~GE(w, 0x0e)) | (GE(w, 0x1c) & ~GE(w, 0x21));
}

/*
 * Top bits of the bytes the word paths cannot take: non-ASCII bytes and CRs. (w ^ CR) + 0x7f
 * sets an ASCII byte's top bit exactly when it is not CR; a non-ASCII byte may carry garbage into
 * its neighbour, but it is already flagged by w's own top bit, so "zero" stays exact.
 */
static inline uint64_t not_plain(uint64_t w)
{
	return (w | ~((w ^ (0x0d * ONES)) + 0x7f * ONES)) & HIGH;
}

#ifdef __SSE2__
#include <emmintrin.h>

/*
 * The rest of a long plain run (ASCII, no CR), 64 bytes at a time: four SSE2 loads, the top
 * bits of their OR flag non-ASCII bytes, a compare with CR flags CRs, one movemask looks at
 * all of them. Twice the speed of the word loop below on an ASCII flood (bench/
 * capture_bench.c), which a relay at pipe speed needs (issue 15). Out of line, and only taken
 * after a whole chunk was plain (capture.flood), so that mixed text, where it would mostly
 * fail, does not pay for it. Returns where the run (or the 64-byte blocks) ends.
 */
static __attribute__((noinline)) const uint8_t *plain_run64(const uint8_t *p, const uint8_t *end)
{
	const __m128i cr = _mm_set1_epi8('\r');

	while (end - p >= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));
		__m128i high = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
		__m128i crs =
			_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, cr), _mm_cmpeq_epi8(b, cr)),
				     _mm_or_si128(_mm_cmpeq_epi8(c, cr), _mm_cmpeq_epi8(d, cr)));

		if (_mm_movemask_epi8(_mm_or_si128(high, crs)))
			break;
		p += 64;
	}
	return p;
}
#endif

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/*
 * The leading whitespace is full but no body has started: skip words that are all ASCII
 * whitespace (without CR). Returns where the byte-wise path must take over.
 */
static const uint8_t *count_lead(struct capture *c, const uint8_t *p, const uint8_t *end)
{
	while (end - p >= 8) {
		uint64_t w = load64(p);

		if (not_plain(w) || (~ascii_space_mask(w) & HIGH))
			break;
		c->lead += 8;
		c->total += 8;
		c->trail += 8;
		p += 8;
	}
	return p;
}

/*
 * One complete, valid multi-byte sequence at p (p < end, *p >= 0x80): its length, with the
 * code point in *ret_cp; 0 when it is invalid or cut off by the end of the chunk, which the
 * byte-wise decoder then handles (it carries state across chunks and makes the U+FFFDs).
 */
static inline size_t u8_sequence(const uint8_t *p, const uint8_t *end, uint32_t *ret_cp)
{
	uint8_t b = p[0], lo = 0x80, hi = 0xbf;
	size_t len = end - p;

	if (b >= 0xc2 && b <= 0xdf) {
		if (len < 2 || (p[1] & 0xc0) != 0x80)
			return 0;
		*ret_cp = (uint32_t)(b & 0x1f) << 6 | (p[1] & 0x3f);
		return 2;
	}
	if (b >= 0xe0 && b <= 0xef) {
		if (b == 0xe0)
			lo = 0xa0;
		else if (b == 0xed)
			hi = 0x9f;
		if (len < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80)
			return 0;
		*ret_cp = (uint32_t)(b & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		return 3;
	}
	if (b >= 0xf0 && b <= 0xf4) {
		if (b == 0xf0)
			lo = 0x90;
		else if (b == 0xf4)
			hi = 0x8f;
		if (len < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		/* The code point only matters for py_space(), and nothing above U+FFFF is space. */
		*ret_cp = 0x10000;
		return 4;
	}
	return 0;
}

/* Top bit set in every byte equal to k, for any byte values (no false positives). */
static inline uint64_t bytes_equal(uint64_t w, uint8_t k)
{
	uint64_t t = w ^ (k * ONES);

	return ~(((t & 0x7f * ONES) + 0x7f * ONES) | t) & HIGH;
}

/* Top bit set in every byte whose bits under `bits` (all < 0x80) are zero. */
static inline uint64_t bits_zero(uint64_t w, uint64_t bits)
{
	return ~((w & bits) + 0x7f * ONES) & HIGH;
}

/* Number of bytes flagged in a mask of top bits; no popcnt instruction needed. */
static inline unsigned count_flags(uint64_t m)
{
	return (unsigned)(((m >> 7) * ONES) >> 56);
}

/*
 * Validate eight bytes of UTF-8 without a branch per byte. Each byte is classified from its top
 * bits (continuation 10xxxxxx, leads 110/1110/11110, invalid 11111); the continuations must be
 * exactly where the leads (here, or carried in from the previous word) put them, and the lead
 * bytes with narrower second-byte ranges (C0/C1 never valid, E0 and F0 against overlongs, ED
 * against surrogates, F4 and F5..F7 against > U+10FFFF) are checked against the next byte,
 * taken from `next` for the last one. Returns false when anything is invalid; else *carry is
 * where the next word must hold continuations.
 */
static inline bool utf8_word(uint64_t w, uint64_t next, uint64_t carry_in, uint64_t *carry,
			     uint64_t *ret_cont)
{
	uint64_t hi = w & HIGH, b6 = (w << 1) & HIGH, b5 = (w << 2) & HIGH;
	uint64_t b4 = (w << 3) & HIGH;
	uint64_t cont = hi & ~b6, lead = hi & b6;
	uint64_t l2 = lead & ~b5, l34 = lead & b5, l4 = l34 & b4;
	uint64_t l234 = lead, l3 = l34 & ~b4;
	uint64_t nib = w & (0x0f * ONES);
	uint64_t out = (l234 >> 56) | (l34 >> 48) | (l4 >> 40);

	/* Leads 11111xxx count as l4 here; the rare-lead check below rejects them. */
	if (cont != ((l234 << 8) | (l34 << 16) | (l4 << 24) | carry_in))
		return false;
	/* The carried continuations are checked now, so that the word always ends clean. */
	if (out & ~(next & HIGH & ~(next << 1)))
		return false;
	/* Leads with narrower ranges are rare in text: check them only when present. */
	if ((l2 & bits_zero(w, 0x1e * ONES)) | l4 |
	    (l3 & (bits_zero(nib, 0x0f * ONES) | bits_zero(nib ^ (0x0d * ONES), 0x0f * ONES)))) {
		uint64_t nxt = (w >> 8) | (next << 56); /* byte i is byte i + 1 of the stream */
		uint64_t n5 = (nxt << 2) & HIGH, n4 = (nxt << 3) & HIGH;
		uint64_t low3 = w & (0x07 * ONES), bad;

		bad = l4 & ((w << 4) & HIGH);					      /* F8.. */
		bad |= l2 & bits_zero(w, 0x1e * ONES);				      /* C0, C1 */
		bad |= l3 & bits_zero(nib, 0x0f * ONES) & ~n5;			      /* E0 80.. */
		bad |= l3 & bits_zero(nib ^ (0x0d * ONES), 0x0f * ONES) & n5;	      /* ED A0.. */
		bad |= l4 & bits_zero(low3, 0x07 * ONES) & ~(n5 | n4);		      /* F0 80.. */
		bad |= l4 & bits_zero(low3 ^ (0x04 * ONES), 0x07 * ONES) & (n5 | n4); /* F4 90.. */
		bad |= l4 & GE(low3, 5);					      /* F5..F7 */
		if (bad)
			return false;
	}
	*carry = out;
	*ret_cont = cont;
	return true;
}

/*
 * The length of the whitespace run at the end of [start, p), which holds only complete, valid
 * sequences (CRLF counting once), or that plus `before` when the whole range is whitespace.
 */
static uint64_t trailing_run(const uint8_t *start, const uint8_t *p, uint64_t before)
{
	uint64_t n = 0;

	while (p > start) {
		uint8_t b = p[-1];

		if (b < 0x80) {
			if (!py_space(b))
				return n;
			p -= b == '\n' && p - 1 > start && p[-2] == '\r' ? 2 : 1;
		} else {
			const uint8_t *q = p - 1;
			uint32_t cp = REPLACEMENT;

			while ((*q & 0xc0) == 0x80)
				q--;
			(void)u8_sequence(q, p, &cp);
			if (!py_space(cp))
				return n;
			p = q;
		}
		n++;
	}
	return before + n;
}

/*
 * The body is full: only count. Three tiers, fastest first. Runs of ASCII without CR go 32
 * bytes at a time, each byte one code point. Other text goes 8 bytes at a time through
 * utf8_word(), which validates without a branch per byte: a word adds 8 code points, less its
 * continuation bytes and the LFs of its CRLFs. Only a word that fails there (an invalid
 * sequence, or the last bytes of the chunk) is taken apart code point by code point. Branches
 * that depend on the text are what make mixed text slow, so there are as few as possible.
 *
 * The trailing whitespace run is only needed at the end, so it is not tracked here: it is
 * worked out once per call by reading back from where counting stopped.
 *
 * Returns where the byte-wise decoder must take over: an invalid or cut-off sequence, or a CR
 * that is the last byte of the chunk (its LF may come in the next one).
 */
static const uint8_t *count_body(struct capture *c, const uint8_t *p, const uint8_t *end)
{
	const uint8_t *start = p;
	uint64_t total = c->total;

	while (p < end) {
		uint64_t carry = 0;
		const uint8_t *stop;

#ifdef __SSE2__
		if (c->flood) {
			const uint8_t *q = plain_run64(p, end);

			total += (uint64_t)(q - p);
			p = q;
		}
#endif
		while (end - p >= 32) {
			uint64_t w0 = load64(p), w1 = load64(p + 8);
			uint64_t w2 = load64(p + 16), w3 = load64(p + 24);

			if (not_plain(w0) | not_plain(w1) | not_plain(w2) | not_plain(w3))
				break;
			total += 32;
			p += 32;
		}
		while (end - p >= 8 && !not_plain(load64(p))) {
			total += 8;
			p += 8;
		}
		while (end - p >= 16) {
			uint64_t w = load64(p), next = load64(p + 8), cont, cr;
			uint64_t prev = (w << 8) | (p > start ? p[-1] : 0);

			/*
			 * Plain ASCII again: back to the faster loops, unless an LF here may
			 * belong to a CR just counted.
			 */
			if (!carry && !not_plain(w) && (uint8_t)prev != '\r')
				break;
			if (!utf8_word(w, next, carry, &carry, &cont))
				break;
			total += 8 - count_flags(cont);
			/* An LF right after a CR adds nothing; CRs are rare, so test for them first. */
			if ((cr = bytes_equal(prev, '\r')))
				total -= count_flags(bytes_equal(w, '\n') & cr);
			p += 8;
		}
		/*
		 * The last word counted may have ended inside a sequence or between CR and LF: those
		 * bytes are counted already (and checked), so step over them.
		 */
		if (carry)
			p += count_flags(carry);
		else if (p > start && p < end && p[-1] == '\r' && *p == '\n')
			p++;
		if (end - p >= 16 && !not_plain(load64(p)))
			continue;

		stop = end - p > 8 ? p + 8 : end;
		while (p < stop) {
			uint8_t b = *p;
			uint32_t cp;
			size_t len = 1;

			if (b == '\r') {
				if (end - p < 2)
					goto out;
				if (p[1] == '\n')
					len = 2;
			} else if (b >= 0x80 && !(len = u8_sequence(p, end, &cp))) {
				goto out;
			}
			total++;
			p += len;
		}
	}
out:
	/* A chunk of plain ASCII from end to end: the next one likely is too (a flood). */
	c->flood = p == end && end - start >= 4096 && (uint64_t)(end - start) == total - c->total;
	c->trail = trailing_run(start, p, c->trail);
	c->total = total;
	return p;
}

static inline bool keeping_done(const struct capture *c)
{
	return c->body ? c->body_kept >= c->max : c->lead_kept >= c->max;
}

void capture_feed(struct capture *c, const void *buf, size_t n)
{
	const uint8_t *p = buf, *end = p + n;

	c->bytes += n;
	while (p < end) {
		if (c->dec.need || c->cr || !keeping_done(c)) {
			step(c, *p++);
		} else if (c->body) {
			p = count_body(c, p, end);
			if (p < end)
				step(c, *p++);
		} else {
			const uint8_t *stop = count_lead(c, p, end);

			if (stop != p) {
				p = stop;
				continue;
			}
			/* A word with anything else goes byte-wise: the body may start in it. */
			for (stop = end - p > 8 ? p + 8 : end; p < stop; p++)
				step(c, *p);
		}
	}
}

void capture_end(struct capture *c)
{
	uint32_t cps[2];
	int n;

	if (c->ended)
		return;
	n = u8dec_end(&c->dec, cps);
	for (int i = 0; i < n; i++)
		translate(c, cps[i]);
	c->cr = false;
	c->ended = true;
}

/* Byte length of the first n code points of the valid UTF-8 at s (which holds at least n). */
static size_t u8_span(const char *s, size_t n)
{
	size_t off = 0;

	while (n--) {
		uint8_t b = (uint8_t)s[off];

		off += b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
	}
	return off;
}

/* A growing output string; every append checks for overflow and allocation failure. */
struct sbuf {
	char *s;
	size_t len, cap;
};

static int sbuf_add(struct sbuf *b, const char *s, size_t n, cordon_error *e)
{
	if (b->cap - b->len <= n) {
		size_t ncap = b->cap ? b->cap : 64;
		char *ns;

		while (ncap - b->len <= n) {
			if (ncap > SIZE_MAX / 2)
				return cordon_err(e, ENOMEM, "output too large");
			ncap *= 2;
		}
		ns = realloc(b->s, ncap);
		if (!ns)
			return cordon_err(e, ENOMEM, "out of memory");
		b->s = ns;
		b->cap = ncap;
	}
	if (n)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int sbuf_addf(struct sbuf *b, cordon_error *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sbuf_addf(struct sbuf *b, cordon_error *e, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return cordon_err(e, EOVERFLOW, "formatting the result");
	return sbuf_add(b, tmp, (size_t)n, e);
}

static void sbuf_done(struct sbuf *b, char **ret, size_t *ret_len)
{
	*ret = b->s;
	if (ret_len)
		*ret_len = b->len;
	b->s = NULL;
}

/* Even an empty result is an allocated "" so that callers can always free and print it. */
static int sbuf_empty(struct sbuf *b, cordon_error *e)
{
	return b->s ? 0 : sbuf_add(b, "", 0, e);
}

/* Append n kept code points of c, from the start of the stream or from its body. */
static int add_kept(struct sbuf *b, const struct capture *c, bool from_body, size_t n,
		    cordon_error *e)
{
	const char *s;

	if (n == 0)
		return 0;
	s = c->buf + (from_body ? c->lead_bytes : 0);
	return sbuf_add(b, s, u8_span(s, n), e);
}

/*
 * Reading before capture_end() is allowed (a caller may want partial text): a pending partial
 * UTF-8 sequence is then simply not part of the text yet.
 */
static int check_usable(const struct capture *c, cordon_error *e)
{
	if (c->failed)
		return cordon_err(e, ENOMEM, "out of memory capturing output");
	return 0;
}

int capture_text(const struct capture *c, char **ret, size_t *ret_len, cordon_error *e)
{
	struct sbuf b = { 0 };
	size_t n;

	if (check_usable(c, e) < 0)
		return -1;
	/* The kept text is the stream's first lead_kept + body_kept code points. */
	n = c->lead_kept + c->body_kept;
	if (n > c->max)
		n = c->max;
	if (add_kept(&b, c, false, n, e) < 0 || sbuf_empty(&b, e) < 0) {
		free(b.s);
		return -1;
	}
	sbuf_done(&b, ret, ret_len);
	return 0;
}

int output_format(const char *text, size_t len, int exit_code, char **ret, size_t *ret_len,
		  cordon_error *e)
{
	struct sbuf b = { 0 };

	if (sbuf_add(&b, text, len, e) < 0 ||
	    (exit_code != 0 &&
	     sbuf_addf(&b, e, "%s[exit code: %d]", len ? "\n" : "", exit_code) < 0)) {
		free(b.s);
		return -1;
	}
	sbuf_done(&b, ret, ret_len);
	return 0;
}

int output_timeout(const char *word, const char *timeout_text, char **ret, size_t *ret_len,
		   cordon_error *e)
{
	struct sbuf b = { 0 };
	char py[64];

	if (!word || !timeout_text)
		return cordon_err(e, EINVAL, "timeout message without a word or a timeout");
	/* AG2's {timeout}: str() of the int or float it was given (docs/compat.md). */
	if (pynum_decimal_str(timeout_text, py, sizeof(py)))
		timeout_text = py;
	if (sbuf_add(&b, word, strlen(word), e) < 0 ||
	    sbuf_add(&b, " timed out after ", strlen(" timed out after "), e) < 0 ||
	    sbuf_add(&b, timeout_text, strlen(timeout_text), e) < 0 ||
	    sbuf_addf(&b, e, "s\n[exit code: %d]", CORDON_EXIT_TIMEOUT) < 0) {
		free(b.s);
		return -1;
	}
	sbuf_done(&b, ret, ret_len);
	return 0;
}

/*
 * strip(out + err)[:max] from the counters and the kept text. In the concatenation of n = o + e
 * code points, the stripped string is [a, n - t) where a is the first non-whitespace position
 * (out's leading run, or all of out plus err's leading run when out is only whitespace) and t
 * the trailing run (err's, or all of err plus out's trailing run when err is only whitespace).
 * Its first k code points are out's body, then err from its very start.
 */
static int compose_text(const struct capture *out, const struct capture *err, size_t max,
			struct sbuf *b, bool *ret_truncated, cordon_error *e)
{
	uint64_t o = out->total, n = out->total + err->total;
	uint64_t a, t, total, k;
	const struct capture *first;
	size_t take;

	*ret_truncated = false;
	if (!out->body && !err->body)
		return sbuf_empty(b, e); /* all whitespace, or nothing at all */

	a = out->body ? out->lead : o + err->lead;
	t = err->body ? err->trail : err->total + out->trail;
	total = n - t - a;
	k = total < max ? total : max;

	first = out->body ? out : err;
	take = (size_t)(k < first->total - first->lead ? k : first->total - first->lead);
	if (add_kept(b, first, true, take, e) < 0)
		return -1;
	if (first == out && k > take) {
		/* err has a body, so its first k - take code points are all kept. */
		if (add_kept(b, err, false, (size_t)(k - take), e) < 0)
			return -1;
	}
	if (total > max) {
		if (sbuf_addf(b, e, "\n[truncated: showing first %zu of %" PRIu64 " chars]", max,
			      total) < 0)
			return -1;
		*ret_truncated = true;
	}
	return sbuf_empty(b, e);
}

int output_compose(const struct capture *out, const struct capture *err, int64_t max_output,
		   int exit_code, char **ret, size_t *ret_len, bool *ret_truncated, cordon_error *e)
{
	struct sbuf b = { 0 };
	bool truncated;
	int r;

	if (check_usable(out, e) < 0 || check_usable(err, e) < 0)
		return -1;
	if (max_output < 0 || (uint64_t)max_output > out->max || (uint64_t)max_output > err->max)
		return cordon_err(e, EINVAL, "max_output %" PRId64 " exceeds what was captured",
				  max_output);
	r = compose_text(out, err, (size_t)max_output, &b, &truncated, e);
	if (r == 0)
		r = output_format(b.s, b.len, exit_code, ret, ret_len, e);
	free(b.s);
	if (r < 0)
		return -1;
	if (ret_truncated)
		*ret_truncated = truncated;
	return 0;
}

int capture_utf8_repair(const char *s, size_t n, char **ret, size_t *ret_len, cordon_error *e)
{
	struct u8dec d = { 0 };
	struct sbuf b = { 0 };
	uint32_t cps[2];
	char enc[8];

	for (size_t i = 0; i <= n; i++) {
		int k = i < n ? u8dec_byte(&d, (uint8_t)s[i], cps) : u8dec_end(&d, cps);
		size_t len = 0;

		for (int j = 0; j < k; j++)
			len += u8_encode(cps[j], enc + len);
		if (sbuf_add(&b, enc, len, e) < 0) {
			free(b.s);
			return -1;
		}
	}
	sbuf_done(&b, ret, ret_len);
	return 0;
}

int capture_fill_result(const struct capture *out, const struct capture *err,
			const struct cordon_profile *p, bool timed_out, const char *word,
			struct cordon_result *r, cordon_error *e)
{
	r->stdout_bytes = capture_bytes(out);
	r->stderr_bytes = capture_bytes(err);
	if (capture_text(out, &r->stdout_text, &r->stdout_len, e) < 0 ||
	    capture_text(err, &r->stderr_text, &r->stderr_len, e) < 0)
		return -1;
	if (timed_out) {
		/* AG2 discards the partial output in text; JSON keeps it (docs/compat.md). */
		r->timed_out = true;
		r->exit_code = CORDON_EXIT_TIMEOUT;
		r->status = CORDON_EXIT_TIMEOUT;
		return output_timeout(word, p->timeout_text, &r->output, &r->output_len, e);
	}
	return output_compose(out, err, p->max_output, r->exit_code, &r->output, &r->output_len,
			      &r->truncated, e);
}
