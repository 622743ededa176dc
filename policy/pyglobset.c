/* SPDX-License-Identifier: MIT */
/*
 * Many Python fnmatch patterns matched at once (policy/internal.h says what and why).
 *
 * Each compiled pattern of k non-star items becomes the states 0..k: state j means "the first
 * j items are matched". Item j+1 moves state j to j+1 on a character it accepts; a '*' between
 * items j and j+1 is a self-loop of state j on any character. Start: state 0 of every
 * pattern; a match: some pattern's state k active at the end. All states of all patterns sit
 * side by side in one bit vector, so one input character is, for every 64 states,
 *
 *	next = ((state << 1) & accept[c]) | (state & self_loop)
 *
 * where accept[c] has the bit of every state whose incoming item accepts c. A pattern's
 * state 0 has no incoming item, so a bit shifted out of one pattern's last state into the
 * next pattern's first is always masked off. accept[] is a table for ASCII; for other code
 * points the few states whose items can accept one ('?', sets, non-ASCII literals) are
 * tested one by one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/internal.h"
#include "runtime/cleanup.h"
#include "runtime/grow.h"

struct wide_state {
	size_t bit;
	const struct pyfn_item *item;
};

struct pyglobset {
	struct pyfn_pattern *pats;
	size_t npats, cap;
	size_t words;
	uint64_t *init, *loop, *final, *ascii; /* ascii: 128 rows of `words` words */
	struct wide_state *wide;
	size_t nwide;
	/*
	 * What a matched string can end with: any character when some pattern ends with '*';
	 * else the ASCII characters the last items accept (end_ascii, a bit each). A string
	 * whose last byte is ASCII and not among them matches no pattern, whatever comes
	 * before: pyglobset_may_end tells without running the automaton.
	 */
	bool end_any;
	uint64_t end_ascii[2];
};

int pyglobset_new(struct pyglobset **ret, cordon_error *e)
{
	struct pyglobset *s = calloc(1, sizeof(*s));

	if (!s)
		return cordon_err(e, ENOMEM, "out of memory");
	*ret = s;
	return 0;
}

void pyglobset_free(struct pyglobset *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->npats; i++)
		pyfn_pattern_free(&s->pats[i]);
	free(s->pats);
	free(s->init);
	free(s->loop);
	free(s->final);
	free(s->ascii);
	free(s->wide);
	free(s);
}

int pyglobset_add(struct pyglobset *s, const char *pattern, cordon_error *e)
{
	if (array_grow(&s->pats, s->npats, &s->cap, 8, e) < 0)
		return -1;
	if (pyfn_compile(pattern, &s->pats[s->npats], e) < 0)
		return -1;
	s->npats++;
	return 0;
}

static void set_bit(uint64_t *v, size_t bit)
{
	v[bit / 64] |= UINT64_C(1) << (bit % 64);
}

static bool item_may_be_wide(const struct pyfn_item *it)
{
	switch (it->kind) {
	case PYFN_LIT:
		return it->c >= 128;
	case PYFN_SET:
		if (it->negate)
			return true;
		for (size_t k = 0; k < it->nranges; k++)
			if (it->ranges[k].hi >= 128)
				return true;
		return false;
	default:
		return true; /* PYFN_ANY */
	}
}

int pyglobset_compile(struct pyglobset *s, cordon_error *e)
{
	size_t nstates = 0, nwide = 0, bit = 0;

	for (size_t i = 0; i < s->npats; i++) {
		nstates++;
		for (size_t k = 0; k < s->pats[i].nitems; k++)
			if (s->pats[i].items[k].kind != PYFN_STAR) {
				nstates++;
				nwide += item_may_be_wide(&s->pats[i].items[k]);
			}
	}
	s->words = (nstates + 63) / 64;
	if (s->words == 0)
		return 0;
	s->init = calloc(s->words, sizeof(uint64_t));
	s->loop = calloc(s->words, sizeof(uint64_t));
	s->final = calloc(s->words, sizeof(uint64_t));
	s->ascii = calloc(128 * s->words, sizeof(uint64_t));
	s->wide = calloc(nwide + 1, sizeof(*s->wide));
	if (!s->init || !s->loop || !s->final || !s->ascii || !s->wide)
		return cordon_err(e, ENOMEM, "out of memory");

	for (size_t i = 0; i < s->npats; i++) {
		const struct pyfn_pattern *p = &s->pats[i];

		set_bit(s->init, bit);
		for (size_t k = 0; k < p->nitems; k++) {
			const struct pyfn_item *it = &p->items[k];

			if (it->kind == PYFN_STAR) {
				set_bit(s->loop, bit);
				continue;
			}
			bit++;
			for (uint32_t c = 0; c < 128; c++)
				if (pyfn_one(it, c))
					set_bit(s->ascii + c * s->words, bit);
			if (item_may_be_wide(it))
				s->wide[s->nwide++] = (struct wide_state){ bit, it };
		}
		set_bit(s->final, bit);
		bit++;
	}
	/*
	 * The characters a match can end with, from the tables just built: a final state that
	 * loops ('*' last) takes any; else c can end a match when it leads into a final state.
	 * (A pattern without items has a final state nothing leads into: it matches "" only.)
	 */
	for (size_t w = 0; w < s->words; w++)
		s->end_any = s->end_any || (s->final[w] & s->loop[w]);
	for (uint32_t c = 0; c < 128; c++)
		for (size_t w = 0; w < s->words; w++)
			if (s->ascii[c * s->words + w] & s->final[w])
				set_bit(s->end_ascii, c);
	return 0;
}

size_t pyglobset_words(const struct pyglobset *s)
{
	return s ? s->words : 0;
}

void pyglobset_start(const struct pyglobset *s, uint64_t *state)
{
	if (s->words)
		memcpy(state, s->init, s->words * sizeof(uint64_t));
}

static void step(const struct pyglobset *s, uint64_t *state, uint32_t c)
{
	uint64_t carry = 0;
	size_t wi = 0;

	for (size_t w = 0; w < s->words; w++) {
		uint64_t d = state[w], acc;

		if (c < 128) {
			acc = s->ascii[c * s->words + w];
		} else {
			acc = 0;
			for (; wi < s->nwide && s->wide[wi].bit / 64 == w; wi++)
				if (pyfn_one(s->wide[wi].item, c))
					acc |= UINT64_C(1) << (s->wide[wi].bit % 64);
		}
		state[w] = (((d << 1) | carry) & acc) | (d & s->loop[w]);
		carry = d >> 63;
	}
}

/* One ASCII character, when every state fits in one word (up to 63 patterns' items). */
static inline uint64_t step1(const struct pyglobset *s, uint64_t d, unsigned char c)
{
	return ((d << 1) & s->ascii[c]) | (d & s->loop[0]);
}

void pyglobset_feed(const struct pyglobset *s, uint64_t *state, const char *str, size_t len)
{
	const unsigned char *u = (const unsigned char *)str;
	size_t i = 0;

	/*
	 * The common case inline: ASCII characters (a code point each, no decoding) into a
	 * single-word state. The rest goes the general way, ASCII still without pystr_next.
	 */
	if (s->words == 1) {
		uint64_t d = state[0];

		while (i < len && u[i] < 0x80)
			d = step1(s, d, u[i++]);
		state[0] = d;
	}
	while (i < len)
		step(s, state, u[i] < 0x80 ? u[i++] : pystr_next(str, len, &i));
}

bool pyglobset_may_end(const struct pyglobset *s, const char *str, size_t len)
{
	unsigned char last;

	if (len == 0 || s->end_any)
		return true;
	/* An ASCII byte is a whole character, even after invalid UTF-8 (pystr_next). */
	last = (unsigned char)str[len - 1];
	return last >= 0x80 || (s->end_ascii[last / 64] >> (last % 64) & 1);
}

bool pyglobset_accepts(const struct pyglobset *s, const uint64_t *state)
{
	for (size_t w = 0; w < s->words; w++)
		if (state[w] & s->final[w])
			return true;
	return false;
}

bool pyglobset_dead(const struct pyglobset *s, const uint64_t *state)
{
	for (size_t w = 0; w < s->words; w++)
		if (state[w])
			return false;
	return true;
}

int pyglobset_match(const struct pyglobset *s, const char *str, cordon_error *e)
{
	_cleanup_free_ uint64_t *st = NULL;

	if (!s || s->words == 0 || !pyglobset_may_end(s, str, strlen(str)))
		return 0;
	st = malloc(s->words * sizeof(uint64_t));
	if (!st)
		return cordon_err(e, ENOMEM, "out of memory");
	pyglobset_start(s, st);
	pyglobset_feed(s, st, str, strlen(str));
	return pyglobset_accepts(s, st);
}
