/* SPDX-License-Identifier: MIT */
/*
 * The orphan test of `cordon gc` (orphan.h says why it needs more than a pid).
 *
 * The machine and boot ids are not sent as they are: machine-id(5) calls the machine id
 * confidential ("should not be exposed in untrusted environments") and asks applications to
 * send a hash keyed with it instead. cordon does what systemd's
 * sd_id128_get_machine_app_specific() does, so that `systemd-id128 machine-id --app-specific=
 * 4a227b85224b4703913e67e6aa892d91` prints this machine's cordon.machine (and `boot-id` its
 * cordon.boot): HMAC-SHA256 keyed with the 16 bytes of the id, of the 16 bytes of cordon's
 * application id, cut to 16 bytes and marked as a version 4 UUID.
 */
#define _GNU_SOURCE
#include "backends/orphan.h"
#include "backends/backend.h"
#include "runtime/sha256.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cordon's application id for app-specific ids (a random UUID, fixed once and for all). */
static const unsigned char APP_ID[16] = { 0x4a, 0x22, 0x7b, 0x85, 0x22, 0x4b, 0x47, 0x03,
					  0x91, 0x3e, 0x67, 0xe6, 0xaa, 0x89, 0x2d, 0x91 };

/* systemd's app-specific id of key: 32 lowercase hex digits and a NUL into ret. */
static void app_specific(const void *key, size_t n, char ret[33])
{
	unsigned char d[SHA256_DIGEST_SIZE];

	sha256_hmac(key, n, APP_ID, sizeof(APP_ID), d);
	/* id128_make_v4_uuid(): the version and variant bits, as systemd sets them */
	d[6] = (d[6] & 0x0f) | 0x40;
	d[8] = (d[8] & 0x3f) | 0x80;
	for (int i = 0; i < 16; i++)
		(void)sprintf(ret + 2 * i, "%02x", d[i]);
}

static int hexval(char c)
{
	static const char digits[] = "0123456789abcdef";
	const char *p = c ? strchr(digits, tolower((unsigned char)c)) : NULL;

	return p ? (int)(p - digits) : -1;
}

/*
 * The 16 bytes of an id written as 32 hex digits, or as a UUID (8-4-4-4-12) when dashes is
 * set, followed by at most one newline and nothing else. An all-zero id is no id (systemd's
 * SD_ID128_NULL).
 */
static bool parse_id(const char *s, bool dashes, unsigned char ret[16])
{
	unsigned char any = 0;
	size_t k = 0;

	for (int i = 0; i < 16; i++) {
		int hi, lo;

		if (dashes && (k == 8 || k == 13 || k == 18 || k == 23) && s[k++] != '-')
			return false;
		hi = hexval(s[k]);
		lo = hi < 0 ? -1 : hexval(s[k + 1]);
		if (lo < 0)
			return false;
		ret[i] = (unsigned char)(hi << 4 | lo);
		any |= ret[i];
		k += 2;
	}
	if (s[k] == '\n')
		k++;
	return s[k] == '\0' && any;
}

/* A small file's text (at most n - 1 bytes; a longer one is cut, and so malformed). */
static bool read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t got;

	if (fd < 0)
		return false;
	got = read(fd, buf, n - 1);
	(void)close(fd);
	if (got < 0)
		return false;
	buf[got] = '\0';
	return true;
}

bool orphan_machine_label(const char *machine_id_path, const char *hostname,
			  char ret[ORPHAN_VALUE_MAX])
{
	unsigned char id[16];
	char buf[64];

	if (read_small(machine_id_path, buf, sizeof(buf)) && parse_id(buf, false, id)) {
		app_specific(id, sizeof(id), ret);
		return true;
	}
	/*
	 * No machine id (a container or a minimal system without one, or "uninitialized" on a
	 * first boot): the hostname, hashed the same way, marked "host-" so that it never equals
	 * a machine id's label. Two machines of one name are then one machine for this label;
	 * orphan_judge trusts it for nothing that a boot id does not also prove.
	 */
	(void)strcpy(ret, "host-");
	app_specific(hostname, strlen(hostname), ret + 5);
	return false;
}

bool orphan_boot_label(const char *boot_id_path, char ret[33])
{
	unsigned char id[16];
	char buf[64];

	ret[0] = '\0';
	if (!read_small(boot_id_path, buf, sizeof(buf)) || !parse_id(buf, true, id))
		return false;
	app_specific(id, sizeof(id), ret);
	return true;
}

/*
 * Whether the /proc this process sees is its own pid namespace's: only then are the pids in
 * /proc/<pid>/stat the ones getpid() gives (a container may see its host's /proc, or unshare
 * --pid may leave the old one mounted). NSpid lists the pid in every namespace from /proc's
 * down to the process's own: one entry, equal to getpid(), is the answer. Without NSpid
 * (before Linux 4.1), /proc/self naming getpid() is.
 */
static bool proc_is_ours(void)
{
	char line[256], link[32];
	bool seen = false, ours = false;
	FILE *f = fopen("/proc/self/status", "re");
	ssize_t n;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *end;
		long pid;

		if (strncmp(line, "NSpid:", 6))
			continue;
		seen = true;
		pid = strtol(line + 6, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\n')
			end++;
		ours = *end == '\0' && pid == (long)getpid();
		break;
	}
	(void)fclose(f);
	if (seen)
		return ours;
	n = readlink("/proc/self", link, sizeof(link) - 1);
	if (n <= 0)
		return false;
	link[n] = '\0';
	return strtol(link, NULL, 10) == (long)getpid();
}

/*
 * cordon.pidns: the inode of this process's pid namespace, and of its time namespace when the
 * kernel has them (5.6), since /proc/<pid>/stat's start time is shifted by the reader's time
 * namespace: the same process seen from another time namespace has another start time, and
 * would look gone.
 *
 * An inode number is unique among the namespaces that exist, and may be given again once one
 * is freed. That is enough here: equal numbers mean the same namespace, or a new one whose
 * number was freed by the end of the old, which the owner (a member of the old) could not
 * outlive; either way the pid and start time test that follows is right.
 */
static void pidns_label(char ret[ORPHAN_VALUE_MAX])
{
	struct stat pid_st, time_st;

	ret[0] = '\0';
	if (!proc_is_ours() || stat("/proc/self/ns/pid", &pid_st) < 0)
		return;
	if (stat("/proc/self/ns/time", &time_st) == 0)
		(void)snprintf(ret, ORPHAN_VALUE_MAX, "%llu-%llu",
			       (unsigned long long)pid_st.st_ino,
			       (unsigned long long)time_st.st_ino);
	else
		(void)snprintf(ret, ORPHAN_VALUE_MAX, "%llu", (unsigned long long)pid_st.st_ino);
}

/*
 * Whether the /proc this process sees hides the processes it may not trace: mounted with
 * hidepid=1, 2 or 4 (systemd's ProtectProc= too), for a process without CAP_SYS_PTRACE. Pid 1,
 * which every pid namespace has, tells: its stat is then not to be read (EACCES, or ENOENT as
 * if it did not exist). An owner's pid that is not found proves nothing there (found in red
 * team: `cordon gc` by a member of group docker, on a /proc with hidepid=2, force-removed the
 * containers of cordond's live runs, its pid being invisible to them).
 */
static bool pids_hidden(void)
{
	int fd = open("/proc/1/stat", O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return true;
	(void)close(fd);
	return false;
}

void orphan_self_read(struct orphan_self *ret)
{
	struct timespec real, boot;
	char name[65] = "";

	*ret = (struct orphan_self){ 0 };
	if (gethostname(name, sizeof(name) - 1) < 0 || !name[0])
		(void)snprintf(name, sizeof(name), "unknown");
	/* For people, and within any label rules: printable ASCII only. */
	for (size_t i = 0; name[i]; i++)
		ret->host[i] = name[i] > ' ' && name[i] < 0x7f ? name[i] : '_';
	if (backend_owner_of(getpid(), ret->owner, sizeof(ret->owner)) < 0)
		(void)snprintf(ret->owner, sizeof(ret->owner), "%d:0", (int)getpid());
	ret->machine_from_id = orphan_machine_label("/etc/machine-id", name, ret->machine);
	(void)orphan_boot_label("/proc/sys/kernel/random/boot_id", ret->boot);
	pidns_label(ret->pidns);
	ret->pids_hidden = pids_hidden();
	/* The wall clock when CLOCK_BOOTTIME was 0: this boot's start (/proc/stat's btime). */
	if (clock_gettime(CLOCK_REALTIME, &real) == 0 && clock_gettime(CLOCK_BOOTTIME, &boot) == 0)
		ret->boot_start = real.tv_sec - boot.tv_sec - (real.tv_nsec < boot.tv_nsec);
}

static bool hex32(const char *s)
{
	return s && strlen(s) == 32 && strspn(s, "0123456789abcdef") == 32;
}

/* n decimal digits at p, as a number. */
static bool digits(const char *p, int n, int *ret)
{
	*ret = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)p[i]))
			return false;
		*ret = *ret * 10 + (p[i] - '0');
	}
	return true;
}

bool orphan_parse_time(const char *s, time_t *ret)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, oh = 0, om = 0;
	long off = 0;
	const char *p;
	time_t t;

	if (!s || strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return false;
	p = s + 19;
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if ((*p == 'Z' || *p == 'z') && !p[1]) {
		off = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && digits(p + 1, 2, &oh) &&
		   p[3] == ':' && digits(p + 4, 2, &om) && oh < 24 && om < 60) {
		off = (*p == '-' ? -1 : 1) * (oh * 3600L + om * 60L);
	} else {
		return false;
	}
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return false;
	*ret = t - off;
	return true;
}

enum orphan_verdict orphan_judge(const struct orphan_self *self, const struct orphan_labels *l)
{
	char now[64];
	unsigned long long start;
	int pid = 0, end = 0;

	if (!l->machine || strcmp(l->machine, self->machine))
		return ORPHAN_NOT_OURS;
	/*
	 * Only what cordon made, as cordon writes it (found in red team: a sandbox labelled
	 * cordon.host alone, by a user or anyone with the key, was removed too). Those of an
	 * older cordon have no cordon.machine and never come here: Daytona deletes its sandboxes
	 * itself once idle (autoStopInterval, then autoDeleteInterval 0); Docker's gc keeps its
	 * containers and counts them.
	 */
	if (!hex32(l->session) || !hex32(l->boot) || !l->owner ||
	    sscanf(l->owner, "%d:%llu%n", &pid, &start, &end) != 2 || pid <= 0 || l->owner[end])
		return ORPHAN_UNKNOWN;
	if (!self->boot[0])
		return ORPHAN_UNKNOWN;
	if (strcmp(l->boot, self->boot)) {
		/*
		 * Made on another boot of this machine: its cordon is gone with that boot, if
		 * "this machine" and "another boot" are true. Not when the machine label is the
		 * hostname's (any machine of that name, up now, has a boot of its own), and not
		 * for one made after this boot began: that is another system sharing this
		 * machine id (a cloned image that was not reset, as machine-id(5) asks), up at the
		 * same time. A creation time (the service's clock) a little ahead of this one
		 * keeps a sandbox or container that was an orphan (Daytona deletes it once idle).
		 */
		if (!self->machine_from_id || !l->created || *l->created >= self->boot_start)
			return ORPHAN_UNKNOWN;
		return ORPHAN_GONE;
	}
	/*
	 * This boot: the pid means something only in the pid namespace it was taken in, and
	 * through a /proc of that namespace. Another namespace's owner may be alive and unseen
	 * from here (another container of this host, with a hostname and machine id like ours).
	 */
	if (!self->pidns[0] || !l->pidns || strcmp(l->pidns, self->pidns))
		return ORPHAN_UNKNOWN;
	if (backend_owner_of(pid, now, sizeof(now)) == 0)
		return strcmp(now, l->owner) ? ORPHAN_GONE : ORPHAN_ALIVE;
	/* Not found: gone, unless this /proc hides processes (it may run, unseen). */
	return self->pids_hidden ? ORPHAN_UNKNOWN : ORPHAN_GONE;
}
