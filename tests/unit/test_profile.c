/* SPDX-License-Identifier: MIT */
/*
 * Profiles: every key, every bad value with its exact file:line error, include and list
 * semantics, the lookup path, hostile files (huge lines, NUL bytes, directories, FIFOs) and
 * the round trip of every shipped profile through `profile show`.
 */
#define _GNU_SOURCE
#include "runtime/cleanup.h"
#include "runtime/profile.h"
#include "tests/lib/testutil.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* /etc/cordon/profiles, then the install prefix's profiles when that is elsewhere. */
static const char *system_dirs(void)
{
	return strcmp(CORDON_SYSCONFDIR, "/etc") ? "/etc/cordon/profiles, " CORDON_SYSCONFDIR
						   "/cordon/profiles"
						 : "/etc/cordon/profiles";
}

static char tmpdir[] = "/tmp/cordon-profile-test-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmpdir));
	/* Lookups must not see an installed /etc copy before the temp dir. */
	setenv("CORDON_PROFILE_PATH", tmpdir, 1);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void teardown(void)
{
	(void)nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(profile, .init = setup, .fini = teardown);

/* Write tmpdir/name with len bytes of text; returns the path (malloc'd). */
static char *write_raw(const char *name, const char *text, size_t len)
{
	char *path;
	FILE *f;

	cr_assert_neq(asprintf(&path, "%s/%s", tmpdir, name), -1);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, len, f), len);
	cr_assert_eq(fclose(f), 0);
	return path;
}

static char *write_conf(const char *name, const char *text)
{
	return write_raw(name, text, strlen(text));
}

static struct cordon_profile *load_ok(const char *path)
{
	struct cordon_profile *p = NULL;
	cordon_error e = { 0 };

	cr_assert_eq(cordon_profile_load(path, &p, &e), 0, "load %s: %s", path, e.msg);
	cr_assert_not_null(p);
	return p;
}

static struct cordon_profile *load_text(const char *text)
{
	_cleanup_free_ char *path = write_conf("t.conf", text);

	return load_ok(path);
}

/* Load `text` as t.conf and expect "<path>:<want>". */
static void expect_err(const char *text, const char *want)
{
	_cleanup_free_ char *path = write_conf("t.conf", text);
	_cleanup_free_ char *full = NULL;
	struct cordon_profile *p = NULL;
	cordon_error e = { 0 };

	cr_assert_neq(asprintf(&full, "%s:%s", path, want), -1);
	cr_assert_eq(cordon_profile_load(path, &p, &e), -1, "loaded: %s", text);
	cr_assert_null(p);
	cr_assert_str_eq(e.msg, full);
}

static void assert_list(const struct cordon_list *l, bool set, size_t n, const char *const *items)
{
	cr_assert_eq(l->set, set);
	cr_assert_eq(l->n, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(l->v[i], items[i]);
	if (l->v)
		cr_assert_null(l->v[n]);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool list_eq(const struct cordon_list *a, const struct cordon_list *b)
{
	if (a->set != b->set || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

/* Every field but name and path (which say where a profile came from). */
static void assert_profile_eq(const struct cordon_profile *a, const struct cordon_profile *b)
{
	cr_assert(str_eq(a->description, b->description));
	cr_assert_eq(a->mode, b->mode);
	cr_assert_eq(a->readonly, b->readonly);
	cr_assert(list_eq(&a->allowed, &b->allowed));
	cr_assert(list_eq(&a->blocked, &b->blocked));
	cr_assert(list_eq(&a->ignore, &b->ignore));
	cr_assert(list_eq(&a->allowed_commands, &b->allowed_commands));
	cr_assert(list_eq(&a->denied_commands, &b->denied_commands));
	cr_assert(list_eq(&a->allowed_paths, &b->allowed_paths));
	cr_assert(list_eq(&a->dangerous_patterns, &b->dangerous_patterns));
	cr_assert_eq(a->command_filtering, b->command_filtering);
	cr_assert(str_eq(a->timeout_text, b->timeout_text));
	cr_assert_eq(a->timeout, b->timeout);
	cr_assert_eq(a->max_output, b->max_output);
	cr_assert_eq(a->memory, b->memory);
	cr_assert_eq(a->pids, b->pids);
	cr_assert_eq(a->cpu_time, b->cpu_time);
	cr_assert_eq(a->file_size, b->file_size);
	cr_assert_eq(a->open_files, b->open_files);
	cr_assert_eq(a->tmp_size, b->tmp_size);
	cr_assert(str_eq(a->backend, b->backend));
	cr_assert_eq(a->network, b->network);
	cr_assert(list_eq(&a->env, &b->env));
	cr_assert_eq(a->env_inherit, b->env_inherit);
	cr_assert(list_eq(&a->ro_bind, &b->ro_bind));
	cr_assert(list_eq(&a->mask, &b->mask));
	cr_assert(list_eq(&a->require, &b->require));
	cr_assert(str_eq(a->docker_image, b->docker_image));
	cr_assert_eq(a->docker_memory, b->docker_memory);
	cr_assert_eq(a->docker_cpu_quota, b->docker_cpu_quota);
	cr_assert(str_eq(a->docker_user, b->docker_user));
	cr_assert_eq(a->docker_pids, b->docker_pids);
	cr_assert(str_eq(a->docker_network, b->docker_network));
	cr_assert(list_eq(&a->docker_ro_bind, &b->docker_ro_bind));
	cr_assert(str_eq(a->docker_workdir, b->docker_workdir));
	cr_assert_eq(a->docker_agent, b->docker_agent);
	cr_assert(str_eq(a->daytona_api_url, b->daytona_api_url));
	cr_assert(str_eq(a->daytona_target, b->daytona_target));
	cr_assert(str_eq(a->daytona_snapshot, b->daytona_snapshot));
	cr_assert(str_eq(a->daytona_image, b->daytona_image));
	cr_assert_eq(a->daytona_cpu, b->daytona_cpu);
	cr_assert_eq(a->daytona_memory, b->daytona_memory);
	cr_assert_eq(a->daytona_disk, b->daytona_disk);
	cr_assert_eq(a->daytona_auto_stop, b->daytona_auto_stop);
	cr_assert(list_eq(&a->daytona_labels, &b->daytona_labels));
	cr_assert(str_eq(a->daytona_workdir, b->daytona_workdir));
	cr_assert_eq(a->daytona_start_timeout, b->daytona_start_timeout);
}

/* format → load the text → format: same text, equal profile. */
static void assert_round_trip(const struct cordon_profile *p)
{
	_cleanup_free_ char *text = NULL, *text2 = NULL, *path = NULL;
	struct cordon_profile *q;
	cordon_error e = { 0 };

	cr_assert_eq(cordon_profile_format(p, &text, &e), 0, "format: %s", e.msg);
	path = write_conf("roundtrip.conf", text);
	q = load_ok(path);
	cr_assert_eq(cordon_profile_format(q, &text2, &e), 0, "format: %s", e.msg);
	cr_assert_str_eq(text2, text);
	assert_profile_eq(p, q);
	cordon_profile_free(q);
}

Test(profile, defaults)
{
	struct cordon_profile *p = NULL;
	cordon_error e = { 0 };

	cr_assert_eq(cordon_profile_new(&p, &e), 0);
	cr_assert_str_eq(p->description, "");
	cr_assert_eq(p->mode, CORDON_MODE_COMPAT);
	cr_assert_not(p->readonly);
	assert_list(&p->allowed, false, 0, NULL);
	assert_list(&p->blocked, false, 0, NULL);
	assert_list(&p->ignore, false, 0, NULL);
	assert_list(&p->dangerous_patterns, false, 0, NULL);
	cr_assert(p->command_filtering);
	cr_assert_eq(p->timeout, 60);
	cr_assert_str_eq(p->timeout_text, "60");
	cr_assert_eq(p->max_output, 100000);
	cr_assert_eq(p->memory, 1ULL << 30);
	cr_assert_eq(p->pids, 256);
	cr_assert_eq(p->cpu_time, 600);
	cr_assert_eq(p->file_size, 1ULL << 30);
	cr_assert_eq(p->open_files, 1024);
	cr_assert_eq(p->tmp_size, 256ULL << 20);
	cr_assert_str_eq(p->backend, "local");
	cr_assert_eq(p->network, CORDON_NET_NONE);
	cr_assert_not(p->env_inherit);
	cr_assert_null(p->docker_image);
	cr_assert_eq(p->docker_memory, 0);
	cr_assert(p->docker_agent);
	cr_assert_null(p->daytona_api_url);
	assert_round_trip(p);
	cordon_profile_free(p);
	cordon_profile_free(NULL);
}

static const char every_key[] = "; every key of SPEC §4\n"
				"[profile]\n"
				"description = Every key\n"
				"[policy]\n"
				"mode = strict\n"
				"readonly = yes\n"
				"allowed = ls\n"
				"allowed = git status\n"
				"blocked = rm\n"
				"ignore = *.key\n"
				"allowed_commands = echo\n"
				"denied_commands = sudo\n"
				"allowed_paths = /work/**\n"
				"dangerous_patterns = \\bcurl\\b => Downloads are not allowed.\n"
				"command_filtering = off\n"
				"[limits]\n"
				"timeout = 1.0\n"
				"max_output = 0\n"
				"memory = 512K\n"
				"pids = 0\n"
				"cpu_time = 30\n"
				"file_size = 4096\n"
				"open_files = 64\n"
				"tmp_size = 2T\n"
				"[sandbox]\n"
				"backend = docker\n"
				"network = host\n"
				"env = FOO=bar=baz\n"
				"env = EMPTY=\n"
				"env_inherit = on\n"
				"ro_bind = /usr\n"
				"ro_bind = /\n"
				"mask = .git/hooks\n"
				"require = userns\n"
				"require = landlock\n"
				"[docker]\n"
				"image = python:3.12-slim\n"
				"memory = 2G\n"
				"cpu_quota = 50000\n"
				"user = 1000:1000\n"
				"pids = 128\n"
				"network = my-net_1.x\n"
				"ro_bind = /usr/share\n"
				"ro_bind = /opt/data:/data\n"
				"workdir = /home/agent/work\n"
				"agent = off\n"
				"[daytona]\n"
				"api_url = https://app.daytona.io/api\n"
				"target = eu\n"
				"snapshot = snap-1\n"
				"image = debian:12\n"
				"cpu = 2\n"
				"memory = 4\n"
				"disk = 10\n"
				"auto_stop = 15\n"
				"labels = team=ai\n"
				"labels = cordon.session=\n"
				"workdir = /home/daytona/work\n"
				"start_timeout = 90\n";

Test(profile, every_key_parses)
{
	struct cordon_profile *p = load_text(every_key);

	cr_assert_str_eq(p->description, "Every key");
	cr_assert_eq(p->mode, CORDON_MODE_STRICT);
	cr_assert(p->readonly);
	assert_list(&p->allowed, true, 2, (const char *[]){ "ls", "git status" });
	assert_list(&p->blocked, true, 1, (const char *[]){ "rm" });
	assert_list(&p->ignore, true, 1, (const char *[]){ "*.key" });
	assert_list(&p->allowed_commands, true, 1, (const char *[]){ "echo" });
	assert_list(&p->denied_commands, true, 1, (const char *[]){ "sudo" });
	assert_list(&p->allowed_paths, true, 1, (const char *[]){ "/work/**" });
	assert_list(&p->dangerous_patterns, true, 1,
		    (const char *[]){ "\\bcurl\\b => Downloads are not allowed." });
	cr_assert_not(p->command_filtering);
	cr_assert_eq(p->timeout, 1.0);
	cr_assert_str_eq(p->timeout_text, "1.0");
	cr_assert_eq(p->max_output, 0);
	cr_assert_eq(p->memory, 512 * 1024);
	cr_assert_eq(p->pids, 0);
	cr_assert_eq(p->cpu_time, 30);
	cr_assert_eq(p->file_size, 4096);
	cr_assert_eq(p->open_files, 64);
	cr_assert_eq(p->tmp_size, 2ULL << 40);
	cr_assert_str_eq(p->backend, "docker");
	cr_assert_eq(p->network, CORDON_NET_HOST);
	assert_list(&p->env, true, 2, (const char *[]){ "FOO=bar=baz", "EMPTY=" });
	cr_assert(p->env_inherit);
	assert_list(&p->ro_bind, true, 2, (const char *[]){ "/usr", "/" });
	assert_list(&p->mask, true, 1, (const char *[]){ ".git/hooks" });
	assert_list(&p->require, true, 2, (const char *[]){ "userns", "landlock" });
	cr_assert_str_eq(p->docker_image, "python:3.12-slim");
	cr_assert_eq(p->docker_memory, 2ULL << 30);
	cr_assert_eq(p->docker_cpu_quota, 50000);
	cr_assert_str_eq(p->docker_user, "1000:1000");
	cr_assert_eq(p->docker_pids, 128);
	cr_assert_str_eq(p->docker_network, "my-net_1.x");
	assert_list(&p->docker_ro_bind, true, 2,
		    (const char *[]){ "/usr/share", "/opt/data:/data" });
	cr_assert_str_eq(p->docker_workdir, "/home/agent/work");
	cr_assert_not(p->docker_agent);
	cr_assert_str_eq(p->daytona_api_url, "https://app.daytona.io/api");
	cr_assert_str_eq(p->daytona_target, "eu");
	cr_assert_str_eq(p->daytona_snapshot, "snap-1");
	cr_assert_str_eq(p->daytona_image, "debian:12");
	cr_assert_eq(p->daytona_cpu, 2);
	cr_assert_eq(p->daytona_memory, 4);
	cr_assert_eq(p->daytona_disk, 10);
	cr_assert_eq(p->daytona_auto_stop, 15);
	assert_list(&p->daytona_labels, true, 2, (const char *[]){ "team=ai", "cordon.session=" });
	cr_assert_str_eq(p->daytona_workdir, "/home/daytona/work");
	cr_assert_eq(p->daytona_start_timeout, 90);
	cr_assert_str_eq(p->path, p->name);
	assert_round_trip(p);
	cordon_profile_free(p);
}

/* Every bad value of every key: "[section]\nkey = value" must fail at line 2 with `msg`. */
static const struct bad {
	const char *section, *key, *value, *msg;
} bad_values[] = {
	{ "profile", "description", ";x",
	  "value starts with ';' (it would read back as a comment)" },
	{ "policy", "mode", "loose", "invalid mode 'loose' (expected compat or strict)" },
	{ "policy", "mode", "", "invalid mode '' (expected compat or strict)" },
	{ "policy", "mode", "Strict", "invalid mode 'Strict' (expected compat or strict)" },
	{ "policy", "readonly", "maybe", "invalid boolean 'maybe' (expected true or false)" },
	{ "policy", "readonly", "", "invalid boolean '' (expected true or false)" },
	{ "policy", "readonly", "2", "invalid boolean '2' (expected true or false)" },
	{ "policy", "allowed", ";ls", "value starts with ';' (it would read back as a comment)" },
	{ "policy", "blocked", ";rm", "value starts with ';' (it would read back as a comment)" },
	{ "policy", "ignore", ";x", "value starts with ';' (it would read back as a comment)" },
	{ "policy", "allowed_commands", ";x",
	  "value starts with ';' (it would read back as a comment)" },
	{ "policy", "denied_commands", ";x",
	  "value starts with ';' (it would read back as a comment)" },
	{ "policy", "allowed_paths", ";x",
	  "value starts with ';' (it would read back as a comment)" },
	{ "policy", "dangerous_patterns", "rm -rf",
	  "'rm -rf' is not of the form 'REGEX => MESSAGE'" },
	{ "policy", "dangerous_patterns", "rm =>",
	  "'rm =>' is not of the form 'REGEX => MESSAGE'" },
	{ "policy", "dangerous_patterns", "=> msg",
	  "'=> msg' is not of the form 'REGEX => MESSAGE'" },
	{ "policy", "dangerous_patterns", "(rm => msg",
	  "invalid regex '(rm': missing closing parenthesis at offset 3" },
	{ "policy", "command_filtering", "nope",
	  "invalid boolean 'nope' (expected true or false)" },
	{ "limits", "timeout", "abc", "invalid number 'abc'" },
	{ "limits", "timeout", "", "invalid number ''" },
	{ "limits", "timeout", "0", "invalid number '0' (must be > 0)" },
	{ "limits", "timeout", "0.0", "invalid number '0.0' (must be > 0)" },
	{ "limits", "timeout", "-1", "invalid number '-1' (must be > 0)" },
	{ "limits", "timeout", "inf", "invalid number 'inf'" },
	{ "limits", "timeout", "nan", "invalid number 'nan'" },
	{ "limits", "timeout", "1e999", "invalid number '1e999'" },
	{ "limits", "timeout", "1e3", "invalid number '1e3'" },
	{ "limits", "timeout", ".5", "invalid number '.5'" },
	{ "limits", "timeout", "1.", "invalid number '1.'" },
	{ "limits", "timeout", "+1", "invalid number '+1'" },
	{ "limits", "timeout", "0x10", "invalid number '0x10'" },
	{ "limits", "timeout", "1 s", "invalid number '1 s'" },
	{ "limits", "timeout", "2000000000",
	  "number '2000000000' is out of range (max 1000000000)" },
	{ "limits", "timeout", "1.0000000000000000000000000000000",
	  "invalid number '1.0000000000000000000000000000000'" },
	{ "limits", "max_output", "-5", "invalid integer '-5' (must be >= 0)" },
	{ "limits", "max_output", "1e99", "invalid integer '1e99'" },
	{ "limits", "max_output", "1.5", "invalid integer '1.5'" },
	{ "limits", "max_output", "", "invalid integer ''" },
	{ "limits", "max_output", "99999999999999999999",
	  "integer '99999999999999999999' is out of range" },
	{ "limits", "max_output", "9223372036854775808",
	  "integer '9223372036854775808' is out of range" },
	{ "limits", "memory", "1X", "invalid size '1X' (expected bytes or K, M, G, T)" },
	{ "limits", "memory", "-1", "invalid size '-1' (expected bytes or K, M, G, T)" },
	{ "limits", "memory", "G", "invalid size 'G' (expected bytes or K, M, G, T)" },
	{ "limits", "memory", "1.5G", "invalid size '1.5G' (expected bytes or K, M, G, T)" },
	{ "limits", "memory", "", "invalid size '' (expected bytes or K, M, G, T)" },
	{ "limits", "memory", "1 G", "invalid size '1 G' (expected bytes or K, M, G, T)" },
	{ "limits", "memory", "16777216T", "size '16777216T' is out of range" },
	{ "limits", "memory", "18446744073709551616",
	  "size '18446744073709551616' is out of range" },
	{ "limits", "pids", "-1", "invalid integer '-1' (must be >= 0)" },
	{ "limits", "pids", "many", "invalid integer 'many'" },
	{ "limits", "pids", "1K", "invalid integer '1K'" },
	{ "limits", "pids", "18446744073709551616",
	  "integer '18446744073709551616' is out of range" },
	{ "limits", "cpu_time", "1.5", "invalid integer '1.5'" },
	{ "limits", "cpu_time", "", "invalid integer ''" },
	{ "limits", "file_size", "1P", "invalid size '1P' (expected bytes or K, M, G, T)" },
	{ "limits", "open_files", "-3", "invalid integer '-3' (must be >= 0)" },
	{ "limits", "tmp_size", "lots", "invalid size 'lots' (expected bytes or K, M, G, T)" },
	{ "sandbox", "backend", "podman",
	  "invalid backend 'podman' (expected local, docker or daytona)" },
	{ "sandbox", "backend", "", "invalid backend '' (expected local, docker or daytona)" },
	{ "sandbox", "network", "bridge", "invalid network 'bridge' (expected none or host)" },
	{ "sandbox", "network", "", "invalid network '' (expected none or host)" },
	{ "sandbox", "env", "FOO", "invalid assignment 'FOO' (expected KEY=VALUE)" },
	{ "sandbox", "env", "1X=2", "invalid variable name '1X'" },
	{ "sandbox", "env", "=x", "invalid variable name ''" },
	{ "sandbox", "env", "A-B=1", "invalid variable name 'A-B'" },
	{ "sandbox", "env_inherit", "sometimes",
	  "invalid boolean 'sometimes' (expected true or false)" },
	{ "sandbox", "ro_bind", "usr",
	  "'usr' is not an absolute path without '.', '..' or empty components" },
	{ "sandbox", "ro_bind", "/usr/../home",
	  "'/usr/../home' is not an absolute path without '.', '..' or empty components" },
	{ "sandbox", "ro_bind", "//usr",
	  "'//usr' is not an absolute path without '.', '..' or empty components" },
	{ "sandbox", "ro_bind", "/usr/",
	  "'/usr/' is not an absolute path without '.', '..' or empty components" },
	{ "sandbox", "ro_bind", "/./usr",
	  "'/./usr' is not an absolute path without '.', '..' or empty components" },
	{ "sandbox", "mask", "/etc/passwd",
	  "'/etc/passwd' is not a relative path without '.', '..' or empty components" },
	{ "sandbox", "mask", "../x",
	  "'../x' is not a relative path without '.', '..' or empty components" },
	{ "sandbox", "mask", "a/../../b",
	  "'a/../../b' is not a relative path without '.', '..' or empty components" },
	{ "sandbox", "mask", "./x",
	  "'./x' is not a relative path without '.', '..' or empty components" },
	{ "sandbox", "mask", "a//b",
	  "'a//b' is not a relative path without '.', '..' or empty components" },
	{ "sandbox", "mask", "..",
	  "'..' is not a relative path without '.', '..' or empty components" },
	{ "sandbox", "require", "selinux",
	  "unknown facility 'selinux' (expected userns, pidns, netns, ipcns, utsns, cgroupns, "
	  "mntns, "
	  "seccomp, landlock or cgroup)" },
	{ "docker", "image", ";x", "value starts with ';' (it would read back as a comment)" },
	{ "docker", "memory", "2GB", "invalid size '2GB' (expected bytes or K, M, G, T)" },
	{ "docker", "cpu_quota", "-1", "invalid integer '-1' (must be >= 0)" },
	{ "docker", "cpu_quota", "half", "invalid integer 'half'" },
	{ "docker", "user", "a b", "invalid user 'a b' (expected USER[:GROUP])" },
	{ "docker", "user", "root;x", "invalid user 'root;x' (expected USER[:GROUP])" },
	{ "docker", "pids", "-1", "invalid integer '-1' (must be >= 0)" },
	{ "docker", "network", "a/b",
	  "invalid network 'a/b' (expected none, host, bridge or a name)" },
	{ "docker", "ro_bind", "usr",
	  "invalid bind 'usr' (expected HOST[:TARGET], absolute paths without '.', '..' or empty "
	  "components, TARGET not '/')" },
	{ "docker", "ro_bind", "/usr:/",
	  "invalid bind '/usr:/' (expected HOST[:TARGET], absolute paths without '.', '..' or "
	  "empty components, TARGET not '/')" },
	{ "docker", "ro_bind", "/a/../b:/c",
	  "invalid bind '/a/../b:/c' (expected HOST[:TARGET], absolute paths without '.', '..' or "
	  "empty components, TARGET not '/')" },
	{ "docker", "ro_bind", "/a:rel",
	  "invalid bind '/a:rel' (expected HOST[:TARGET], absolute paths without '.', '..' or "
	  "empty components, TARGET not '/')" },
	{ "docker", "workdir", "/",
	  "invalid workdir '/' (expected an absolute path other than '/', without '.', '..', ':' "
	  "or empty components)" },
	{ "docker", "workdir", "work",
	  "invalid workdir 'work' (expected an absolute path other than '/', without '.', '..', "
	  "':' or empty components)" },
	{ "docker", "workdir", "/w/../x",
	  "invalid workdir '/w/../x' (expected an absolute path other than '/', without '.', "
	  "'..', ':' or empty components)" },
	{ "docker", "agent", "maybe", "invalid boolean 'maybe' (expected true or false)" },
	{ "daytona", "api_url", "ftp://x", "invalid URL 'ftp://x' (expected http:// or https://)" },
	{ "daytona", "api_url", "https://",
	  "invalid URL 'https://' (expected http:// or https://)" },
	{ "daytona", "api_url", "https://a b", "invalid URL 'https://a b' (contains a blank)" },
	{ "daytona", "target", ";eu", "value starts with ';' (it would read back as a comment)" },
	{ "daytona", "snapshot", ";s", "value starts with ';' (it would read back as a comment)" },
	{ "daytona", "image", ";i", "value starts with ';' (it would read back as a comment)" },
	{ "daytona", "cpu", "two", "invalid integer 'two'" },
	{ "daytona", "memory", "-1", "invalid integer '-1' (must be >= 0)" },
	{ "daytona", "auto_stop", "1.5", "invalid integer '1.5'" },
	{ "daytona", "start_timeout", "1m", "invalid integer '1m'" },
	{ "daytona", "workdir", "work",
	  "invalid workdir 'work' (expected an absolute path other than '/', without '.', '..', "
	  "':' or empty components)" },
	{ "daytona", "workdir", "/",
	  "invalid workdir '/' (expected an absolute path other than "
	  "'/', without '.', '..', ':' or empty components)" },
	{ "daytona", "labels", "team",
	  "invalid label 'team' (expected KEY=VALUE, KEY not empty and without blanks)" },
	{ "daytona", "labels", "=x",
	  "invalid label '=x' (expected KEY=VALUE, KEY not empty and without blanks)" },
	{ "daytona", "labels", "a b=x",
	  "invalid label 'a b=x' (expected KEY=VALUE, KEY not empty and without blanks)" },
};

Test(profile, every_bad_value)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_values); i++) {
		const struct bad *b = &bad_values[i];
		_cleanup_free_ char *text = NULL, *want = NULL;

		/* "key =;x" keeps the ';' (it does not follow a blank); "key = " + "" is empty. */
		cr_assert_neq(asprintf(&text, "[%s]\n%s =%s%s\n", b->section, b->key,
				       b->value[0] == ';' ? "" : " ", b->value),
			      -1);
		cr_assert_neq(asprintf(&want, "2: [%s] %s: %s", b->section, b->key, b->msg), -1);
		expect_err(text, want);
	}
}

/*
 * A dangerous pattern is checked as the policy searches it, Python's syntax translated: \u
 * escapes (docs/compat.md) load, and a broken one names its PCRE2 form (found in review: the
 * raw compile refused every \u escape).
 */
Test(profile, dangerous_patterns_take_python_escapes)
{
	struct cordon_profile *p = load_text("[policy]\ndangerous_patterns = \\u0072m\\s => no rm\n"
					     "dangerous_patterns = [\\u0100-\\u017e]x => latin\n");

	assert_list(&p->dangerous_patterns, true, 2,
		    (const char *[]){ "\\u0072m\\s => no rm", "[\\u0100-\\u017e]x => latin" });
	cordon_profile_free(p);
	expect_err("[policy]\ndangerous_patterns = (\\u0072m => bad\n",
		   "2: [policy] dangerous_patterns: invalid regex '(\\u0072m': missing closing "
		   "parenthesis at offset 10 of its PCRE2 form '(\\x{0072}m'");
}

Test(profile, value_line_numbers)
{
	expect_err("# comment\n\n[limits]\ntimeout = 5\n\n; note\n"
		   "timeout = abc\n",
		   "7: [limits] timeout: invalid number 'abc'");
	expect_err("[sandbox]\nenv = A=1\n[policy]\nmode = compat\nmode = lax\n",
		   "5: [policy] mode: invalid mode 'lax' (expected compat or strict)");
}

Test(profile, unknown_names)
{
	expect_err("[policy]\nmode = compat\n[foo]\nbar = 1\n", "3: unknown section [foo]");
	expect_err("[policy]\nmode = compat\n\nbar = 1\n", "4: unknown key 'bar' in [policy]");
	expect_err("[limits]\nallowed = ls\n", "2: unknown key 'allowed' in [limits]");
	expect_err("[Policy]\n", "1: unknown section [Policy]");
	expect_err("[]\n", "1: unknown section []");
	expect_err("timeout = 5\n", "1: key 'timeout' outside of any section");
	expect_err("[policy] mode = strict\n", "1: unexpected text after section header");
	expect_err("[policy]\n= ls\n", "2: unknown key '' in [policy]");
	/* Section and key names are case-sensitive, like the rest of the syntax. */
	expect_err("[policy]\nMode = strict\n", "2: unknown key 'Mode' in [policy]");
}

Test(profile, syntax_errors)
{
	expect_err("[policy]\nallowed\n", "2: syntax error (expected [section] or key = value)");
	expect_err("[policy\nmode = strict\n",
		   "1: syntax error (expected [section] or key = value)");
	/* The first error wins, whichever kind it is. */
	expect_err("[policy]\njunk\nmode = lax\n",
		   "2: syntax error (expected [section] or key = value)");
	expect_err("[policy]\njunk\n[nope]\n",
		   "2: syntax error (expected [section] or key = value)");
	expect_err("[nope]\njunk\n", "1: unknown section [nope]");
	expect_err("[policy]\nallowed = x\n[limits]\nmemory = 1Q\njunk\n",
		   "5: syntax error (expected [section] or key = value)");
}

Test(profile, comments_blanks_and_line_endings)
{
	struct cordon_profile *p =
		load_text("\xef\xbb\xbf# BOM, then a comment\r\n"
			  "  [policy]   ; indented header, comment\r\n"
			  "\tallowed = ls -l   ; inline comment\r\n"
			  "    allowed = a;b\r\n" /* ';' not after a blank is data */
			  "allowed:cat\n"	  /* libinih accepts ':' as Python's configparser */
			  "blocked = # not a comment\n"
			  "[limits]\n"
			  "timeout=7\n"
			  "timeout = 8\n"); /* a repeated scalar: the last one wins */

	assert_list(&p->allowed, true, 3, (const char *[]){ "ls -l", "a;b", "cat" });
	assert_list(&p->blocked, true, 1, (const char *[]){ "# not a comment" });
	cr_assert_str_eq(p->timeout_text, "8");
	cordon_profile_free(p);
}

Test(profile, hostile_bytes)
{
	static const char nul[] = "[policy]\nallowed = a\0b\n";
	_cleanup_free_ char *path = write_raw("nul.conf", nul, sizeof(nul) - 1);
	_cleanup_free_ char *want = NULL;
	struct cordon_profile *p = NULL;
	cordon_error e;

	cr_assert_eq(cordon_profile_load(path, &p, &e), -1);
	cr_assert_neq(asprintf(&want, "%s:2: NUL byte in profile", path), -1);
	cr_assert_str_eq(e.msg, want);
	expect_err("[policy]\nallowed = a\x01z\n", "2: control character 0x01");
	expect_err("[policy]\nallowed = a\rb\n", "2: control character 0x0d");
	expect_err("[policy]\nallowed = a\x7f\n", "2: control character 0x7f");
}

Test(profile, long_lines)
{
	size_t big = 10 * 1024 * 1024;
	char *text = malloc(big + 64);
	char line199[256], line200[256];
	int n;

	/* A 10 MB line at line 3: an error naming it, not 50000 garbage keys. */
	n = sprintf(text, "[profile]\n# ok\ndescription = ");
	memset(text + n, 'a', big);
	strcpy(text + n + big, "\n");
	expect_err(text, "3: line too long (max 199 bytes)");
	free(text);

	/* 199 bytes is the limit, with or without a CRLF ending. */
	n = sprintf(line199, "[profile]\ndescription=");
	memset(line199 + n, 'd', 199 - strlen("description="));
	strcpy(line199 + n + 199 - strlen("description="), "\r\n");
	expect_err(line199,
		   "2: [profile] description: value too long (max 185 bytes for this key)");
	n = sprintf(line200, "[profile]\n#");
	memset(line200 + n, '#', 199);
	strcpy(line200 + n + 199, "\n");
	expect_err(line200, "2: line too long (max 199 bytes)");

	/* The longest description that fits: "description = " + 185 bytes = 199. */
	{
		char ok[256];
		struct cordon_profile *p;

		n = sprintf(ok, "[profile]\ndescription = ");
		memset(ok + n, 'x', 185);
		strcpy(ok + n + 185, "\n");
		p = load_text(ok);
		cr_assert_eq(strlen(p->description), 185);
		assert_round_trip(p);
		cordon_profile_free(p);
	}
}

Test(profile, file_too_large)
{
	size_t lines = 11000, len = lines * 100;
	char *text = malloc(len + 1);
	char want[64];

	for (size_t i = 0; i < lines; i++) {
		memset(text + i * 100, '#', 99);
		text[i * 100 + 99] = '\n';
	}
	text[len] = '\0';
	/* Byte 1048577 is on line 10486. */
	snprintf(want, sizeof(want), "%u: profile too large (max 1048576 bytes)", 10486);
	expect_err(text, want);
	free(text);
}

Test(profile, not_a_regular_file)
{
	_cleanup_free_ char *dir = NULL, *fifo = NULL, *want = NULL, *missing = NULL;
	struct cordon_profile *p = NULL;
	cordon_error e;

	cr_assert_neq(asprintf(&dir, "%s/dir.conf", tmpdir), -1);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(cordon_profile_load(dir, &p, &e), -1);
	cr_assert_neq(asprintf(&want, "profile '%s' is not a regular file", dir), -1);
	cr_assert_str_eq(e.msg, want);
	cr_assert_eq(e.code, 0);
	free(want);

	/* A FIFO must not hang the loader. */
	cr_assert_neq(asprintf(&fifo, "%s/fifo.conf", tmpdir), -1);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(cordon_profile_load(fifo, &p, &e), -1);
	cr_assert_neq(asprintf(&want, "profile '%s' is not a regular file", fifo), -1);
	cr_assert_str_eq(e.msg, want);
	free(want);

	cr_assert_eq(cordon_profile_load("/dev/zero", &p, &e), -1);
	cr_assert_str_eq(e.msg, "profile '/dev/zero' is not a regular file");

	cr_assert_neq(asprintf(&missing, "%s/missing.conf", tmpdir), -1);
	cr_assert_eq(cordon_profile_load(missing, &p, &e), -1);
	cr_assert_neq(asprintf(&want, "cannot open profile '%s'", missing), -1);
	cr_assert_str_eq(e.msg, want);
	cr_assert_eq(e.code, ENOENT);
	cr_assert_null(p);
}

Test(profile, list_semantics)
{
	struct cordon_profile *p;

	p = load_text("[policy]\nmode = compat\n");
	assert_list(&p->allowed, false, 0, NULL); /* absent: no list */
	cordon_profile_free(p);

	p = load_text("[policy]\nallowed =\n");
	assert_list(&p->allowed, true, 0, NULL); /* empty: refuse everything */
	assert_round_trip(p);
	cordon_profile_free(p);

	p = load_text("[policy]\nallowed = ls\nblocked = rm\nallowed = cat\n");
	assert_list(&p->allowed, true, 2, (const char *[]){ "ls", "cat" });
	cordon_profile_free(p);

	/* An empty value resets, wherever it is. */
	p = load_text(
		"[policy]\nallowed = ls\nallowed =\nallowed = cat\nblocked = rm\nblocked =\n");
	assert_list(&p->allowed, true, 1, (const char *[]){ "cat" });
	assert_list(&p->blocked, true, 0, NULL);
	assert_round_trip(p);
	cordon_profile_free(p);

	/* Lists in different sections are independent. */
	p = load_text(
		"[sandbox]\nro_bind = /usr\n[policy]\nallowed = x\n[sandbox]\nro_bind = /etc\n");
	assert_list(&p->ro_bind, true, 2, (const char *[]){ "/usr", "/etc" });
	cordon_profile_free(p);
}

Test(profile, include_overrides)
{
	_cleanup_free_ char *base = write_conf("base.conf", "[profile]\n"
							    "description = Base\n"
							    "[policy]\n"
							    "allowed = ls\n"
							    "allowed = cat\n"
							    "blocked = rm\n"
							    "ignore = *.pem\n"
							    "[limits]\n"
							    "timeout = 5\n"
							    "memory = 2G\n");
	/* include comes last in the file but is applied first. */
	_cleanup_free_ char *child = write_conf("child.conf", "[policy]\n"
							      "allowed = echo\n"
							      "allowed = pwd\n"
							      "blocked =\n"
							      "[limits]\n"
							      "timeout = 7.5\n"
							      "[profile]\n"
							      "include = base\n");
	struct cordon_profile *p = load_ok(child);

	cr_assert_str_eq(p->description, "Base");
	/* The first occurrence in the child replaces, the second appends. */
	assert_list(&p->allowed, true, 2, (const char *[]){ "echo", "pwd" });
	assert_list(&p->blocked, true, 0, NULL);
	/* Untouched lists and scalars come from the base. */
	assert_list(&p->ignore, true, 1, (const char *[]){ "*.pem" });
	cr_assert_eq(p->memory, 2ULL << 30);
	cr_assert_str_eq(p->timeout_text, "7.5");
	cr_assert_eq(p->timeout, 7.5);
	cr_assert_str_eq(p->name, child);
	cr_assert_str_eq(p->path, child);
	assert_round_trip(p);
	cordon_profile_free(p);
}

Test(profile, include_forms)
{
	_cleanup_free_ char *sub = NULL, *rel = NULL, *absinc = NULL, *text = NULL, *empty = NULL;
	struct cordon_profile *p;

	cr_assert_neq(asprintf(&sub, "%s/sub", tmpdir), -1);
	cr_assert_eq(mkdir(sub, 0700), 0);
	free(write_conf("sub/leaf.conf", "[limits]\npids = 7\n"));
	/* A relative path is relative to the including file. */
	rel = write_conf("sub/mid.conf",
			 "[profile]\ninclude = leaf.conf\n[limits]\ncpu_time = 9\n");
	p = load_ok(rel);
	cr_assert_eq(p->pids, 7);
	cr_assert_eq(p->cpu_time, 9);
	cordon_profile_free(p);

	cr_assert_neq(asprintf(&text, "[profile]\ninclude = %s/sub/leaf.conf\n", tmpdir), -1);
	absinc = write_conf("abs.conf", text);
	p = load_ok(absinc);
	cr_assert_eq(p->pids, 7);
	cordon_profile_free(p);

	p = load_text("[profile]\ninclude = sub/mid.conf\n");
	cr_assert_eq(p->pids, 7);
	cr_assert_eq(p->cpu_time, 9);
	cordon_profile_free(p);

	/* `include =` is no include (SPEC §4's example). */
	empty = write_conf("empty.conf", "[profile]\ninclude =\n");
	p = load_ok(empty);
	cr_assert_eq(p->pids, 256);
	cordon_profile_free(p);
}

Test(profile, include_errors)
{
	_cleanup_free_ char *a = NULL, *b = NULL, *want = NULL, *self = NULL;
	struct cordon_profile *p = NULL;
	cordon_error e;

	a = write_conf("a.conf", "[limits]\npids = 1\n[profile]\ninclude = b.conf\n");
	b = write_conf("b.conf", "[profile]\ninclude = a\n");
	cr_assert_eq(cordon_profile_load(a, &p, &e), -1);
	cr_assert_neq(asprintf(&want, "%s:2: include loop: '%s' is already being loaded", b, a),
		      -1);
	cr_assert_str_eq(e.msg, want);
	free(want);

	self = write_conf("self.conf", "[profile]\ndescription = me\ninclude = self.conf\n");
	cr_assert_eq(cordon_profile_load(self, &p, &e), -1);
	cr_assert_neq(
		asprintf(&want, "%s:3: include loop: '%s' is already being loaded", self, self),
		-1);
	cr_assert_str_eq(e.msg, want);
	free(want);

	expect_err("[profile]\ninclude = a\ninclude = b\n", "3: include given more than once");
	expect_err(
		"[profile]\ninclude = bad name\n",
		"2: include: invalid profile name 'bad name' (expected letters, digits, '_', '.', "
		"'-', not starting with '.')");
	cr_assert_neq(
		asprintf(&want,
			 "2: include: profile 'nosuch' not found (searched: %s, %s, " CORDON_SRCDIR
			 "/profiles)",
			 tmpdir, system_dirs()),
		-1);
	expect_err("[profile]\ninclude = nosuch\n", want);
	free(want);
	cr_assert_neq(asprintf(&want, "2: include: cannot open profile '%s/gone.conf'", tmpdir),
		      -1);
	expect_err("[profile]\ninclude = gone.conf\n", want);
	free(want);

	/* An error inside the included file names that file and its line. */
	free(write_conf("broken.conf", "[limits]\n\ntimeout = never\n"));
	cr_assert_neq(asprintf(&want, "%s/broken.conf:3: [limits] timeout: invalid number 'never'",
			       tmpdir),
		      -1);
	{
		_cleanup_free_ char *top = write_conf("top.conf", "[profile]\ninclude = broken\n");

		cr_assert_eq(cordon_profile_load(top, &p, &e), -1);
		cr_assert_str_eq(e.msg, want);
	}
	cr_assert_null(p);
}

Test(profile, include_depth)
{
	struct cordon_profile *p = NULL;
	_cleanup_free_ char *want = NULL, *top = NULL;
	cordon_error e;

	/* p0 → p1 → … → p16: sixteen nested includes are allowed. */
	for (int i = 0; i <= 16; i++) {
		char name[32], text[96];

		snprintf(name, sizeof(name), "p%d.conf", i);
		if (i < 16)
			snprintf(text, sizeof(text),
				 "[profile]\ninclude = p%d\n[limits]\npids = %d\n", i + 1, i);
		else
			snprintf(text, sizeof(text), "[limits]\npids = 16\ncpu_time = 16\n");
		free(write_conf(name, text));
	}
	top = write_conf("p0.conf", "[profile]\ninclude = p1\n[limits]\npids = 0\n");
	p = load_ok("p0");
	cr_assert_eq(p->pids, 0);
	cr_assert_eq(p->cpu_time, 16);
	cordon_profile_free(p);

	/* A seventeenth is not. */
	free(write_conf("p16.conf", "[profile]\ninclude = p17\n"));
	free(write_conf("p17.conf", "[limits]\npids = 17\n"));
	p = NULL;
	cr_assert_eq(cordon_profile_load("p0", &p, &e), -1);
	cr_assert_neq(asprintf(&want, "%s/p16.conf:2: includes nested too deeply (max 16)", tmpdir),
		      -1);
	cr_assert_str_eq(e.msg, want);
	cr_assert_null(p);
}

Test(profile, units)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "0", 0 },
		{ "4096", 4096 },
		{ "512K", 512ULL << 10 },
		{ "512k", 512ULL << 10 },
		{ "256M", 256ULL << 20 },
		{ "1G", 1ULL << 30 },
		{ "3g", 3ULL << 30 },
		{ "2T", 2ULL << 40 },
		{ "16777215T", 16777215ULL << 40 },
		{ "18446744073709551615", UINT64_MAX },
		{ "007", 7 },
	};
	cordon_error e;
	uint64_t v;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		cr_assert_eq(profile_parse_size(ok[i].s, &v, &e), 0, "%s: %s", ok[i].s, e.msg);
		cr_assert_eq(v, ok[i].v, "%s", ok[i].s);
	}
	/* Sizes print back in the largest exact unit. */
	{
		_cleanup_free_ char *text = NULL;
		struct cordon_profile *p =
			load_text("[limits]\nmemory = 1024M\nfile_size = 1536K\ntmp_size = 0\n"
				  "[docker]\nmemory = 1025\n");

		cr_assert_eq(cordon_profile_format(p, &text, &e), 0);
		cr_assert(strstr(text, "\nmemory = 1G\n"));
		cr_assert(strstr(text, "\nfile_size = 1536K\n"));
		cr_assert(strstr(text, "\ntmp_size = 0\n"));
		cr_assert(strstr(text, "\nmemory = 1025\n"));
		cordon_profile_free(p);
	}
}

Test(profile, scalar_parsers)
{
	static const char *const sec_ok[] = { "60", "1", "1.0", "0.001", "1.50", "1000000000" };
	static const char *const truthy[] = { "true", "yes", "on", "1", "TRUE", "Yes" };
	static const char *const falsy[] = { "false", "no", "off", "0", "False", "OFF" };
	cordon_error e;
	int64_t c;
	double d;
	bool b;

	for (size_t i = 0; i < ARRAY_SIZE(sec_ok); i++)
		cr_assert_eq(profile_parse_seconds(sec_ok[i], &d, &e), 0, "%s", sec_ok[i]);
	cr_assert_eq(profile_parse_seconds("1.50", &d, &e), 0);
	cr_assert_eq(d, 1.5);
	cr_assert_eq(profile_parse_seconds("1000000000.5", &d, &e), -1);

	cr_assert_eq(profile_parse_count("9223372036854775807", &c, &e), 0);
	cr_assert_eq(c, INT64_MAX);
	cr_assert_eq(profile_parse_count("0", &c, &e), 0);
	cr_assert_eq(c, 0);
	cr_assert_eq(profile_parse_count(" 5", &c, &e), -1);
	cr_assert_str_eq(e.msg, "invalid integer ' 5'");

	for (size_t i = 0; i < ARRAY_SIZE(truthy); i++) {
		cr_assert_eq(profile_parse_bool(truthy[i], &b, &e), 0);
		cr_assert(b);
		cr_assert_eq(profile_parse_bool(falsy[i], &b, &e), 0);
		cr_assert_not(b);
	}

	/* Messages quote at most 64 bytes of a (command-line) value. */
	{
		char big[1000];

		memset(big, '9', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		cr_assert_eq(profile_parse_count(big, &c, &e), -1);
		cr_assert_eq(strlen(e.msg), strlen("integer '...' is out of range") + 64);
	}
}

Test(profile, timeout_text_verbatim)
{
	static const char *const texts[] = { "1", "1.0", "0.5", "60", "2.50", "007" };

	for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
		_cleanup_free_ char *conf = NULL;
		struct cordon_profile *p;

		cr_assert_neq(asprintf(&conf, "[limits]\ntimeout = %s\n", texts[i]), -1);
		p = load_text(conf);
		cr_assert_str_eq(p->timeout_text, texts[i]);
		assert_round_trip(p);
		cordon_profile_free(p);
	}
}

Test(profile, lookup_path)
{
	_cleanup_free_ char *d1 = NULL, *d2 = NULL, *env = NULL, *path = NULL, *want = NULL;
	struct cordon_profile *p;
	cordon_error e;

	cr_assert_neq(asprintf(&d1, "%s/one", tmpdir), -1);
	cr_assert_neq(asprintf(&d2, "%s/two", tmpdir), -1);
	cr_assert_eq(mkdir(d1, 0700), 0);
	cr_assert_eq(mkdir(d2, 0700), 0);
	free(write_conf("one/x.conf", "[profile]\ndescription = one\n"));
	free(write_conf("two/x.conf", "[profile]\ndescription = two\n"));
	free(write_conf("two/y.conf", "[profile]\ndescription = y\n"));
	/* Empty components are skipped; the first directory wins. */
	cr_assert_neq(asprintf(&env, ":%s::%s:", d1, d2), -1);
	setenv("CORDON_PROFILE_PATH", env, 1);

	cr_assert_eq(profile_find("x", &path, &e), 0);
	cr_assert_neq(asprintf(&want, "%s/x.conf", d1), -1);
	cr_assert_str_eq(path, want);
	free(want);
	p = load_ok("x");
	cr_assert_str_eq(p->description, "one");
	cr_assert_str_eq(p->name, "x");
	cr_assert_str_eq(p->path, path);
	cordon_profile_free(p);
	p = load_ok("y");
	cr_assert_str_eq(p->description, "y");
	cordon_profile_free(p);

	cr_assert_eq(cordon_profile_load("missing", &p, &e), -1);
	cr_assert_neq(asprintf(&want,
			       "profile 'missing' not found (searched: %s, %s, %s, " CORDON_SRCDIR
			       "/profiles)",
			       d1, d2, system_dirs()),
		      -1);
	cr_assert_str_eq(e.msg, want);

	/* Names are a plain charset; anything with '/' or ".conf" is a path. */
	static const char *const bad[] = { "", ".hidden", "a b", "x;y", "..", "é" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cr_assert_eq(profile_find(bad[i], &path, &e), -1, "%s", bad[i]);
		cr_assert(strstr(e.msg, "invalid profile name"), "%s", e.msg);
	}
	cr_assert(profile_name_is_path("x.conf"));
	cr_assert(profile_name_is_path("./x"));
	cr_assert(profile_name_is_path("/etc/cordon/profiles/default.conf"));
	cr_assert_not(profile_name_is_path("default"));
	cr_assert(profile_name_is_path(".conf")); /* a path, though an odd one */
	cr_assert(profile_name_valid("ag2-compat"));
	cr_assert(profile_name_valid("v1.2_x"));
}

Test(profile, list)
{
	_cleanup_free_ char *d1 = NULL, *d2 = NULL, *env = NULL;
	char **lines = NULL;
	cordon_error e;
	size_t n = 0;

	cr_assert_neq(asprintf(&d1, "%s/one", tmpdir), -1);
	cr_assert_neq(asprintf(&d2, "%s/two", tmpdir), -1);
	cr_assert_eq(mkdir(d1, 0700), 0);
	cr_assert_eq(mkdir(d2, 0700), 0);
	free(write_conf("one/zeta.conf", "[profile]\ndescription = Z\tone\n"));
	free(write_conf("two/zeta.conf", "[profile]\ndescription = shadowed\n"));
	free(write_conf("two/alpha.conf", "[profile]\ndescription = A\n"));
	free(write_conf("two/broken.conf", "[limits]\ntimeout = x\n"));
	free(write_conf("two/.hidden.conf", "[profile]\ndescription = hidden\n"));
	free(write_conf("two/notes.txt", "not a profile\n"));
	cr_assert_neq(asprintf(&env, "%s:%s", d1, d2), -1);
	setenv("CORDON_PROFILE_PATH", env, 1);

	cr_assert_eq(profile_list(&lines, &e), 0, "%s", e.msg);
	for (char **l = lines; *l; l++) {
		if (strncmp(*l, "alpha\t", 6) == 0 || strncmp(*l, "zeta\t", 5) == 0 ||
		    strncmp(*l, "broken\t", 7) == 0)
			n++;
		cr_assert_null(strstr(*l, "shadowed"));
		cr_assert_null(strstr(*l, "hidden"));
		if (l != lines)
			cr_assert_lt(strcmp(l[-1], l[0]), 0, "sorted");
	}
	cr_assert_eq(n, 3);
	{
		_cleanup_free_ char *a = NULL, *z = NULL, *b = NULL;

		cr_assert_neq(asprintf(&a, "alpha\t%s/alpha.conf\tA", d2), -1);
		cr_assert_neq(asprintf(&z, "zeta\t%s/zeta.conf\tZ one", d1), -1);
		cr_assert_neq(
			asprintf(&b,
				 "broken\t%s/broken.conf\t(invalid: %s/broken.conf:2: [limits] "
				 "timeout: invalid number 'x')",
				 d2, d2),
			-1);
		bool fa = false, fz = false, fb = false;
		for (char **l = lines; *l; l++) {
			fa |= strcmp(*l, a) == 0;
			fz |= strcmp(*l, z) == 0;
			fb |= strcmp(*l, b) == 0;
		}
		cr_assert(fa && fz && fb);
	}
	profile_strv_free(lines);
}

static const char *const shipped[] = { "default",    "readonly",       "strict",
				       "ag2-compat", "shell-executor", "network" };

Test(profile, shipped_round_trip)
{
	setenv("CORDON_PROFILE_PATH", CORDON_SRCDIR "/profiles", 1);
	for (size_t i = 0; i < ARRAY_SIZE(shipped); i++) {
		struct cordon_profile *p = load_ok(shipped[i]);

		cr_assert_str_neq(p->description, "", "%s has a description", shipped[i]);
		assert_round_trip(p);
		cordon_profile_free(p);
	}
}

Test(profile, shipped_contents)
{
	struct cordon_profile *def, *p;

	setenv("CORDON_PROFILE_PATH", CORDON_SRCDIR "/profiles", 1);
	def = load_ok("default");
	cr_assert_eq(def->mode, CORDON_MODE_COMPAT);
	cr_assert_eq(def->network, CORDON_NET_NONE);
	cr_assert_not(def->env_inherit);
	cr_assert_not(def->readonly);
	cr_assert_not(def->allowed.set);
	cr_assert_not(def->blocked.set);
	cr_assert_not(def->ignore.set);
	cr_assert_not(def->dangerous_patterns.set);
	cr_assert_str_eq(def->ro_bind.v[0], "/usr");
	cr_assert_str_eq(def->mask.v[0], ".git/hooks");
	cr_assert_str_eq(def->timeout_text, "60");

	p = load_ok("readonly");
	cr_assert(p->readonly);
	cr_assert(list_eq(&p->mask, &def->mask));
	cordon_profile_free(p);

	p = load_ok("strict");
	cr_assert_eq(p->mode, CORDON_MODE_STRICT);
	cordon_profile_free(p);

	p = load_ok("network");
	cr_assert_eq(p->network, CORDON_NET_HOST);
	cr_assert_not(p->env_inherit);
	cordon_profile_free(p);

	p = load_ok("ag2-compat");
	cr_assert(p->env_inherit);
	cr_assert(list_eq(&p->ro_bind, &def->ro_bind));
	/* The host network locally (AG2's LocalEnvironment), none in Docker (DockerEnvironment). */
	cr_assert_eq(p->network, CORDON_NET_HOST);
	cr_assert_str_eq(p->docker_network, "none");
	cordon_profile_free(p);

	p = load_ok("shell-executor");
	assert_list(&p->dangerous_patterns, true, 0, NULL);
	assert_list(&p->denied_commands, true, 0, NULL);
	assert_list(&p->allowed_paths, true, 1, (const char *[]){ "**" });
	cr_assert_not(p->allowed_commands.set);
	cr_assert(p->command_filtering);
	cordon_profile_free(p);
	cordon_profile_free(def);
}

/*
 * A network the run asks for (--network, a cordond body's "network") is the run's, and the
 * container's too: it clears [docker] network, which otherwise wins (SPEC section 2: the
 * command line wins).
 */
Test(profile, a_requested_network_wins_over_docker_network)
{
	struct cordon_profile *p = load_ok("ag2-compat");

	cr_assert_str_eq(p->docker_network, "none");
	profile_set_network(p, CORDON_NET_NONE);
	cr_assert_eq(p->network, CORDON_NET_NONE);
	cr_assert_null(p->docker_network);
	cordon_profile_free(p);
}

/* Values a front end sets that libinih could not read back: format refuses them. */
Test(profile, format_refuses_unrepresentable)
{
	static const char *const bad[] = { "a ;b", " lead", "trail ", ";x", "a\nb", "a\tb\t" };
	static const char *const msgs[] = {
		"[policy] allowed: value contains a blank followed by ';' (the rest would read "
		"back "
		"as a comment)",
		"[policy] allowed: value starts or ends with a blank",
		"[policy] allowed: value starts or ends with a blank",
		"[policy] allowed: value starts with ';' (it would read back as a comment)",
		"[policy] allowed: control character 0x0a in value",
		"[policy] allowed: value starts or ends with a blank",
	};
	struct cordon_profile *p = NULL;
	cordon_error e;
	char *text = NULL;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cr_assert_eq(cordon_profile_new(&p, &e), 0);
		cr_assert_eq(cordon_list_add(&p->allowed, bad[i], &e), 0);
		cr_assert_eq(cordon_profile_format(p, &text, &e), -1, "%s", bad[i]);
		cr_assert_str_eq(e.msg, msgs[i]);
		cordon_profile_free(p);
	}
	/* An item that fails its key's own check (a front end bypassing the parser). */
	cr_assert_eq(cordon_profile_new(&p, &e), 0);
	cr_assert_eq(cordon_list_add(&p->env, "1BAD=x", &e), 0);
	cr_assert_eq(cordon_profile_format(p, &text, &e), -1);
	cr_assert_str_eq(e.msg, "[sandbox] env: invalid variable name '1BAD'");
	cordon_profile_free(p);

	cr_assert_eq(cordon_profile_new(&p, &e), 0);
	free(p->backend);
	p->backend = strdup("");
	cr_assert_eq(cordon_profile_format(p, &text, &e), -1);
	cr_assert_str_eq(
		e.msg, "[sandbox] backend: invalid backend '' (expected local, docker or daytona)");
	cordon_profile_free(p);

	/* A timeout set without its text is printed as an exact decimal. */
	cr_assert_eq(cordon_profile_new(&p, &e), 0);
	p->timeout = 2.25;
	cr_assert_eq(cordon_profile_format(p, &text, &e), 0);
	cr_assert(strstr(text, "\ntimeout = 2.25\n"), "%s", text);
	free(text);
	p->timeout = -1;
	cr_assert_eq(cordon_profile_format(p, &text, &e), -1);
	cordon_profile_free(p);

	cr_assert_eq(profile_check_value("allowed", "a;b", &e), 0);
	cr_assert_eq(profile_check_value("allowed", "", &e), 0);
}

Test(profile, format_layout)
{
	struct cordon_profile *p = NULL;
	cordon_error e;
	_cleanup_free_ char *text = NULL;

	cr_assert_eq(cordon_profile_new(&p, &e), 0);
	cr_assert_eq(cordon_profile_format(p, &text, &e), 0);
	cr_assert_str_eq(text, "[profile]\n"
			       "description =\n"
			       "\n"
			       "[policy]\n"
			       "mode = compat\n"
			       "readonly = false\n"
			       "command_filtering = true\n"
			       "\n"
			       "[limits]\n"
			       "timeout = 60\n"
			       "max_output = 100000\n"
			       "memory = 1G\n"
			       "pids = 256\n"
			       "cpu_time = 600\n"
			       "file_size = 1G\n"
			       "open_files = 1024\n"
			       "tmp_size = 256M\n"
			       "\n"
			       "[sandbox]\n"
			       "backend = local\n"
			       "network = none\n"
			       "env_inherit = false\n"
			       "\n"
			       "[docker]\n"
			       "image =\n"
			       "memory = 0\n"
			       "cpu_quota = 0\n"
			       "user =\n"
			       "pids = 0\n"
			       "network =\n"
			       "workdir =\n"
			       "agent = true\n"
			       "\n"
			       "[daytona]\n"
			       "api_url =\n"
			       "target =\n"
			       "snapshot =\n"
			       "image =\n"
			       "cpu = 0\n"
			       "memory = 0\n"
			       "disk = 0\n"
			       "auto_stop = 0\n"
			       "workdir =\n"
			       "start_timeout = 0\n");
	cordon_profile_free(p);
}

/*
 * A profile found on the search path must be the caller's or root's and writable by its owner
 * alone, its directory too: a profile decides the sandbox (binds, masks, network), so one
 * another user could write, replace or plant is a bypass. Found in review: a profile planted
 * in a directory a member could make was loaded by root's cordon and cordond. (As root here:
 * nobody's file is another user's.)
 */
Test(profile, root_reads_only_root_controlled_profiles)
{
	char *dir = tu_tmpdir(), path[4200];
	struct cordon_profile *p = NULL;
	cordon_error e;

	if (geteuid() != 0)
		cr_skip("needs root");
	chmod(dir, 0755);
	tu_write_file(dir, "mine.conf", "[profile]\ndescription = x\n");
	(void)snprintf(path, sizeof(path), "%s/mine.conf", dir);
	setenv("CORDON_PROFILE_PATH", dir, 1);
	cr_assert_eq(cordon_profile_load("mine", &p, &e), 0, "%s", e.msg);
	cordon_profile_free(p);
	p = NULL;
	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_expect_eq(cordon_profile_load("mine", &p, &e), -1, "a profile of nobody's was read");
	cr_expect(strstr(e.msg, "you or root control"), "%s", e.msg);
	cr_assert_eq(chown(path, 0, 0), 0);
	cr_assert_eq(chmod(path, 0666), 0);
	cr_expect_eq(cordon_profile_load("mine", &p, &e), -1, "a world-writable profile was read");
	cr_assert_eq(chmod(path, 0644), 0);
	cr_assert_eq(chmod(dir, 0777), 0);
	cr_expect_eq(cordon_profile_load("mine", &p, &e), -1,
		     "a profile in a world-writable directory was read");
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_expect_eq(cordon_profile_load("mine", &p, &e), 0, "%s", e.msg);
	cordon_profile_free(p);
	unsetenv("CORDON_PROFILE_PATH");
	tu_rmtree(dir);
	free(dir);
}
