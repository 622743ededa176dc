/* SPDX-License-Identifier: MIT */
/*
 * The Daytona backend's own tests. Built with backends/daytona/daytona.c included, so that every
 * request the backend can send is made here one by one.
 *
 * contract: every request cordon can send, sent to `prism mock` on the OpenAPI documents in
 * backends/daytona/openapi/ (tests/daytona/run.sh starts the mocks and exports their URLs).
 * Prism checks each request against the document: a wrong type, a missing required field or
 * parameter, or a missing bearer key is a 4xx there, so each test asserts a 2xx.
 *
 * pure: the parts that need no server (the command line AG2 would send, paths, URLs).
 */
#include "backends/daytona/daytona.c"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <sys/stat.h>

static const char *need_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		/* Under CI a skip is a failure (CONVENTIONS.md): fail loudly either way. */
		cr_assert_fail("%s is not set: run this through tests/daytona/run.sh", name);
	}
	return v;
}

static struct cordon_profile *profile(void)
{
	struct cordon_profile *p = NULL;
	cordon_error e = { 0 };

	cr_assert_eq(cordon_profile_new(&p, &e), 0, "%s", e.msg);
	return p;
}

/* The backend's open, as cordon_run calls it (the workdir is the host's, unused remotely). */
static int dt_open(const struct cordon_profile *p, void **ret, cordon_error *e)
{
	const struct cordon_open o = { .profile = p, .workdir = "/tmp", .workdir_fd = -1 };

	return daytona_open(&o, ret, e);
}

/* A handle on the mock control plane, with a sandbox id as if created. */
static struct daytona *mock_handle(struct cordon_profile *p)
{
	void *h = NULL;
	cordon_error e = { 0 };

	setenv("DAYTONA_API_KEY", "dtn_contract_test_key", 1);
	setenv("DAYTONA_API_URL", need_env("CORDON_TEST_DAYTONA_MOCK_API"), 1);
	cr_assert_eq(dt_open(p, &h, &e), 0, "%s", e.msg);
	return h;
}

static void with_toolbox(struct daytona *d)
{
	free(d->id);
	free(d->toolbox);
	d->id = strdup("sandbox-1");
	cr_assert(asprintf(&d->toolbox, "%s/%s", need_env("CORDON_TEST_DAYTONA_MOCK_TOOLBOX"),
			   d->id) > 0);
}

static void assert_2xx(const struct dt_response *r, const char *what)
{
	cr_assert(r->status >= 200 && r->status < 300, "%s: HTTP %ld: %.400s", what, r->status,
		  r->body ? r->body : "");
}

/* One API call that the mock must answer with a 2xx (what names it in the failure). */
static void call_2xx(struct daytona *d, const char *method, const char *path, json_t *body,
		     enum dt_retry retry, const char *what)
{
	struct dt_request rq;
	struct dt_response r = { 0 };
	cordon_error e = { 0 };

	cr_assert_eq(api_call(d, method, path, what, body, retry, &rq, &r, &e), 0, "%s: %s", what,
		     e.msg);
	assert_2xx(&r, what);
	dt_response_free(&r);
}

Test(contract, create_from_snapshot)
{
	struct cordon_profile *p = profile();
	struct daytona *d;
	cordon_error e = { 0 };
	json_t *b;

	p->daytona_snapshot = strdup("daytonaio/sandbox:0.4.3");
	p->daytona_target = strdup("eu");
	p->daytona_auto_stop = 15;
	cordon_list_add(&p->daytona_labels, "team=ai", &e);
	d = mock_handle(p);
	b = create_body(d);
	cr_assert_not_null(b);
	call_2xx(d, "POST", "/sandbox", b, DT_RETRY_SAFE, "create from snapshot");
	json_decref(b);
	daytona_free(d);
	cordon_profile_free(p);
}

Test(contract, create_from_image_with_resources)
{
	struct cordon_profile *p = profile();
	struct daytona *d;
	json_t *b;

	p->daytona_image = strdup("python:3.12-slim");
	p->daytona_cpu = 2;
	p->daytona_memory = 4;
	p->daytona_disk = 10;
	p->network = CORDON_NET_HOST;
	d = mock_handle(p);
	b = create_body(d);
	cr_assert_not_null(b);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "buildInfo"),
							   "dockerfileContent")),
			 "FROM python:3.12-slim\n");
	cr_assert(json_is_false(json_object_get(b, "networkBlockAll")));
	cr_assert_null(json_object_get(b, "snapshot"));
	call_2xx(d, "POST", "/sandbox", b, DT_RETRY_SAFE, "create from image");
	json_decref(b);
	daytona_free(d);
	cordon_profile_free(p);
}

Test(contract, get_list_delete_and_toolbox_url)
{
	struct cordon_profile *p = profile();
	struct daytona *d = mock_handle(p);
	struct dt_request rq;
	struct dt_response r = { 0 };
	cordon_error e = { 0 };
	char *path;

	call_2xx(d, "GET", "/sandbox/sandbox-1", NULL, DT_RETRY_ALL, "get sandbox");
	/* the answer the mock gives is a sandbox read_sandbox accepts */
	cr_assert_eq(api_call(d, "GET", "/sandbox/sandbox-1", "get sandbox", NULL, DT_RETRY_ALL,
			      &rq, &r, &e),
		     0);
	{
		char st[32], why[160];

		cr_assert_eq(read_sandbox(d, &r, "get", st, sizeof(st), why, sizeof(why), &e), 0,
			     "%s", e.msg);
		cr_assert(d->toolbox && strstr(d->toolbox, d->id), "toolbox %s", d->toolbox);
	}
	dt_response_free(&r);
	path = dt_url_query("", "/sandbox", "labels", "{\"cordon.session\":\"abc\"}");
	call_2xx(d, "GET", path, NULL, DT_RETRY_ALL, "list sandboxes by label");
	free(path);
	call_2xx(d, "GET", "/sandbox/sandbox-1/toolbox-proxy-url", NULL, DT_RETRY_ALL,
		 "toolbox proxy url");
	call_2xx(d, "DELETE", "/sandbox/sandbox-1", NULL, DT_RETRY_ALL, "delete sandbox");
	daytona_free(d);
	cordon_profile_free(p);
}

Test(contract, the_key_is_required)
{
	struct cordon_profile *p = profile();
	struct daytona *d = mock_handle(p);
	struct dt_request rq;
	struct dt_response r = { 0 };
	cordon_error e = { 0 };
	struct curl_slist *h = d->c.headers;

	/* Without the Authorization header the mock refuses: so the header above is what counts. */
	d->c.headers = h->next;
	cr_assert_eq(api_call(d, "GET", "/sandbox/sandbox-1", "get sandbox", NULL, DT_RETRY_ALL,
			      &rq, &r, &e),
		     0, "%s", e.msg);
	cr_assert_eq(r.status, 401);
	d->c.headers = h;
	dt_response_free(&r);
	daytona_free(d);
	cordon_profile_free(p);
}

Test(contract, toolbox_folder_execute_files)
{
	struct cordon_profile *p = profile();
	struct daytona *d = mock_handle(p);
	struct dt_request rq;
	struct dt_response r = { 0 };
	cordon_error e = { 0 };
	char *argv[] = { "sh", "-c", "echo 'it''s' \"$HOME\"", NULL };
	char *envp[] = { "PATH=/host/bin", "LANG=C.UTF-8", "FOO=bar", NULL };
	struct cordon_exec x = { .argv = argv, .envp = envp, .profile = p, .stdin_fd = -1 };
	json_t *b;
	char *text, *url;
	void *buf = NULL;
	size_t n = 0;

	with_toolbox(d);
	cr_assert_eq(make_workdir(d, &e), 0, "%s", e.msg);
	b = exec_body(d, &x, 60, &(cordon_error){ 0 });
	cr_assert_not_null(b);
	text = json_dumps(b, JSON_COMPACT);
	cr_assert(asprintf(&url, "%s/process/execute", d->toolbox) > 0);
	rq = (struct dt_request){ .method = "POST",
				  .url = url,
				  .what = "execute",
				  .content_type = "application/json",
				  .body = text,
				  .body_len = strlen(text),
				  .retry = DT_RETRY_SAFE };
	cr_assert_eq(dt_send(&d->c, &rq, &r, &e), 0, "%s", e.msg);
	assert_2xx(&r, "execute");
	dt_response_free(&r);
	free(url);
	free(text);
	json_decref(b);
	cr_assert_eq(daytona_put_file(d, "dir/a.txt", "hello\r\n--x", 10, &e), 0, "%s", e.msg);
	cr_assert_eq(daytona_get_file(d, "dir/a.txt", &buf, &n, &e), 0, "%s", e.msg);
	free(buf);
	cr_assert_eq(daytona_delete_file(d, "dir/a.txt", &e), 0, "%s", e.msg);
	daytona_free(d);
	cordon_profile_free(p);
}

/* ---- pure ---- */

Test(pure, shell_join_is_shlex_join)
{
	char *a1[] = { "sh", "-c", "echo hi", NULL };
	char *a2[] = { "ls", "-la", "a_b.c/d@e%f+g=h:i,j", NULL };
	char *a3[] = { "echo", "it's", "", "$HOME", NULL };
	char *s;

	s = shell_join(a1);
	cr_assert_str_eq(s, "sh -c 'echo hi'");
	free(s);
	s = shell_join(a2);
	cr_assert_str_eq(s, "ls -la a_b.c/d@e%f+g=h:i,j");
	free(s);
	s = shell_join(a3);
	cr_assert_str_eq(s, "echo 'it'\"'\"'s' '' '$HOME'");
	free(s);
}

Test(pure, exec_body_env_and_cwd)
{
	struct cordon_profile *p = profile();
	struct daytona d = { .workdir = (char *)"/workspace" };
	char *argv[] = { "true", NULL };
	char *envp[] = { "PATH=/usr/bin",	  "HOME=/root", "LANG=C", "DAYTONA_API_KEY=secret",
			 "DAYTONA_JWT_TOKEN=jwt", "FOO=a=b",	NULL };
	struct cordon_exec x = { .argv = argv, .envp = envp, .profile = p, .stdin_fd = -1 };
	json_t *b = exec_body(&d, &x, 3, &(cordon_error){ 0 }), *envs;

	cr_assert_not_null(b);
	cr_assert_str_eq(json_string_value(json_object_get(b, "cwd")), "/workspace");
	cr_assert_eq(json_integer_value(json_object_get(b, "timeout")), 3);
	envs = json_object_get(b, "envs");
	cr_assert_str_eq(json_string_value(json_object_get(envs, "LANG")), "C");
	cr_assert_str_eq(json_string_value(json_object_get(envs, "FOO")), "a=b");
	/* the host's PATH/HOME and the credentials are not passed on */
	cr_assert_null(json_object_get(envs, "PATH"));
	cr_assert_null(json_object_get(envs, "HOME"));
	cr_assert_null(json_object_get(envs, "DAYTONA_API_KEY"));
	cr_assert_null(json_object_get(envs, "DAYTONA_JWT_TOKEN"));
	json_decref(b);
	/* ... unless the profile's env names them itself */
	cordon_list_add(&p->env, "DAYTONA_API_KEY=secret", &(cordon_error){ 0 });
	cordon_list_add(&p->env, "PATH=/opt/bin", &(cordon_error){ 0 });
	b = exec_body(&d, &x, 3, &(cordon_error){ 0 });
	envs = json_object_get(b, "envs");
	cr_assert_str_eq(json_string_value(json_object_get(envs, "DAYTONA_API_KEY")), "secret");
	cr_assert_str_eq(json_string_value(json_object_get(envs, "PATH")), "/usr/bin");
	json_decref(b);
	cordon_profile_free(p);
}

Test(pure, remote_paths)
{
	struct daytona d = { .workdir = (char *)"/workspace" };
	cordon_error e = { 0 };
	const char *bad[] = { "", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a/.", "a/" };
	char *out = NULL;

	cr_assert_eq(remote_path(&d, "a/b.txt", &out, &e), 0);
	cr_assert_str_eq(out, "/workspace/a/b.txt");
	free(out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(remote_path(&d, bad[i], &out, &e), -1, "'%s' accepted", bad[i]);
		cr_assert_eq(e.code, EINVAL);
	}
}

Test(pure, urls)
{
	cordon_error e = { 0 };
	const char *ok[] = { "https://app.daytona.io/api", "http://127.0.0.1:4010",
			     "http://localhost/api", "http://[::1]:8080/x", "http://127.9.9.9" };
	const char *bad[] = { "ftp://x",
			      "http://10.0.0.1/api",
			      "http://127.evil.com/",
			      "http://example.com",
			      "https://user:pw@host/api",
			      "https://",
			      "https://a b/" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		cr_assert_eq(dt_check_url(ok[i], "API URL", &e), 0, "%s: %s", ok[i], e.msg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(dt_check_url(bad[i], "API URL", &e), -1, "%s accepted", bad[i]);
	{
		char *u = dt_url_query("http://h", "/files", "path", "/a b/ü&x=1");

		cr_assert_str_eq(u, "http://h/files?path=/a%20b/%C3%BC%26x%3D1");
		free(u);
	}
}

Test(pure, ids)
{
	cr_assert(id_ok("aa1ee310-17ce-4666-b424-e767ae4d95c5"));
	cr_assert(id_ok("sandbox_1.x"));
	cr_assert_not(id_ok(""));
	cr_assert_not(id_ok(".."));
	cr_assert_not(id_ok("a/b"));
	cr_assert_not(id_ok("a?b"));
	cr_assert_not(id_ok("a%2fb"));
	cr_assert_not(id_ok(NULL));
}

Test(pure, config_errors)
{
	struct cordon_profile *p = profile();
	void *h = NULL;
	cordon_error e = { 0 };

	unsetenv("DAYTONA_API_KEY");
	cr_assert_eq(dt_open(p, &h, &e), -1);
	cr_assert(strstr(e.msg, "DAYTONA_API_KEY is not set"), "%s", e.msg);
	setenv("DAYTONA_API_KEY", "k", 1);
	setenv("DAYTONA_API_URL", "http://192.0.2.1/api", 1);
	cr_assert_eq(dt_open(p, &h, &e), -1);
	cr_assert(strstr(e.msg, "plain http"), "%s", e.msg);
	setenv("DAYTONA_API_URL", "https://app.daytona.io/api", 1);
	p->daytona_snapshot = strdup("s");
	p->daytona_image = strdup("i");
	cr_assert_eq(dt_open(p, &h, &e), -1);
	cr_assert(strstr(e.msg, "both snapshot"), "%s", e.msg);
	free(p->daytona_image);
	p->daytona_image = NULL;
	p->daytona_cpu = 2;
	cr_assert_eq(dt_open(p, &h, &e), -1);
	cr_assert(strstr(e.msg, "apply only to an image"), "%s", e.msg);
	setenv("DAYTONA_API_KEY", "bad\nkey", 1);
	p->daytona_cpu = 0;
	cr_assert_eq(dt_open(p, &h, &e), -1);
	cr_assert(strstr(e.msg, "control character"), "%s", e.msg);
	cordon_profile_free(p);
}

Test(pure, status_errors_never_hold_the_key)
{
	struct dt_client c = { .key = (char *)"dtn_SECRET" };
	struct dt_request rq = { .method = "POST",
				 .url = "https://app.daytona.io/api/sandbox?x=dtn_SECRET",
				 .what = "create sandbox" };
	char body[] = "{\"message\":\"bad key dtn_SECRET given\",\"statusCode\":401}";
	struct dt_response r = { .status = 401, .body = body, .body_len = sizeof(body) - 1 };
	cordon_error e = { 0 };

	dt_status_error(&c, &rq, &r, &e);
	cr_assert(strstr(e.msg, "authentication failed"), "%s", e.msg);
	cr_assert(strstr(e.msg, "app.daytona.io/api/sandbox"), "%s", e.msg);
	cr_assert_null(strstr(e.msg, "dtn_SECRET"), "%s", e.msg);
	cr_assert(strstr(e.msg, "bad key"), "%s", e.msg);
}

/* The mock does validate: a body the document does not allow is refused (so a 2xx above means
 * the request matched the document). */
Test(contract, mock_rejects_a_bad_request)
{
	struct cordon_profile *p = profile();
	struct daytona *d = mock_handle(p);
	struct dt_request rq;
	struct dt_response r = { 0 };
	cordon_error e = { 0 };
	json_t *b = json_pack("{s:i, s:s}", "snapshot", 5, "autoStopInterval", "never");

	cr_assert_eq(
		api_call(d, "POST", "/sandbox", "create sandbox", b, DT_RETRY_SAFE, &rq, &r, &e), 0,
		"%s", e.msg);
	cr_assert(r.status >= 400 && r.status < 500, "HTTP %ld", r.status);
	dt_response_free(&r);
	json_decref(b);
	with_toolbox(d);
	b = json_pack("{s:s, s:s}", "cwd", "/workspace", "timeout", "10"); /* no command */
	{
		char *text = json_dumps(b, JSON_COMPACT), *url;

		cr_assert(asprintf(&url, "%s/process/execute", d->toolbox) > 0);
		rq = (struct dt_request){ .method = "POST",
					  .url = url,
					  .what = "execute",
					  .content_type = "application/json",
					  .body = text,
					  .body_len = strlen(text),
					  .retry = DT_RETRY_SAFE };
		cr_assert_eq(dt_send(&d->c, &rq, &r, &e), 0, "%s", e.msg);
		cr_assert(r.status >= 400 && r.status < 500, "HTTP %ld", r.status);
		free(text);
		free(url);
	}
	dt_response_free(&r);
	json_decref(b);
	daytona_free(d);
	cordon_profile_free(p);
}

/* ---- gc: which sandboxes are orphans of this machine (backends/orphan.c) ---- */

/* path of a temporary file holding text (NULL: a path that does not exist). */
static char *temp_file(const char *text)
{
	char *path = strdup("/tmp/cordon-test-orphan.XXXXXX");
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	if (text)
		cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	if (!text)
		unlink(path);
	return path;
}

Test(pure, machine_label_is_systemds_app_specific_id_or_the_hostname)
{
	/* systemd-id128 machine-id --app-specific=4a227b85224b4703913e67e6aa892d91 on a machine
	 * whose /etc/machine-id is 3d1219c7…: HMAC-SHA256 keyed with the id, never the id. */
	const char *id = "9dfe9c85322440cb827e931c40e006aa";
	const char *host = "host-552cd755873e409cb61972bbf8ef6095"; /* of "build-7" */
	const char *good[] = { "3d1219c7c4c5404aaa1f6d2a48adfda4\n",
			       "3d1219c7c4c5404aaa1f6d2a48adfda4",
			       "3D1219C7C4C5404AAA1F6D2A48ADFDA4\n" };
	const char *bad[] = { NULL,
			      "",
			      "uninitialized\n", /* systemd's first boot */
			      "00000000000000000000000000000000\n",
			      "3d1219c7c4c5404aaa1f6d2a48adfda\n",
			      "3d1219c7c4c5404aaa1f6d2a48adfda4a\n",
			      "3d1219c7-c4c5-404a-aa1f-6d2a48adfda4\n",
			      "3d1219c7c4c5404aaa1f6d2a48adfda4\n\n",
			      "3d1219c7c4c5404aaa1f6d2a48adfda4 \n",
			      "3d1219c7c4c5404aaa1f6d2a48adfdg4\n" };
	char got[ORPHAN_VALUE_MAX];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *f = temp_file(good[i]);

		cr_assert(orphan_machine_label(f, "build-7", got), "'%s' refused", good[i]);
		cr_assert_str_eq(got, id);
		unlink(f);
		free(f);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *f = temp_file(bad[i]);

		cr_assert_not(orphan_machine_label(f, "build-7", got), "'%s' taken", bad[i]);
		cr_assert_str_eq(got, host, "'%s'", bad[i]);
		unlink(f);
		free(f);
	}
}

Test(pure, boot_label_is_systemds_app_specific_boot_id)
{
	const char *bad[] = { NULL, "", "0d465c8c32444428bb0f93743aa79609\n",
			      "0d465c8c-3244-4428-bb0f-93743aa7960\n",
			      "00000000-0000-0000-0000-000000000000\n" };
	char got[33], *f = temp_file("0d465c8c-3244-4428-bb0f-93743aa79609\n");

	cr_assert(orphan_boot_label(f, got));
	cr_assert_str_eq(got, "86d09e1a500e4e3f9768d45b4819dd4a");
	unlink(f);
	free(f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = temp_file(bad[i]);
		cr_assert_not(orphan_boot_label(f, got), "'%s' taken", bad[i]);
		cr_assert_str_eq(got, "");
		unlink(f);
		free(f);
	}
}

Test(pure, this_process_is_described)
{
	struct orphan_self s;
	char machine[ORPHAN_VALUE_MAX], host[65] = "", owner[64];
	struct stat st;
	time_t now = time(NULL);

	orphan_self_read(&s);
	(void)gethostname(host, sizeof(host) - 1);
	cr_assert_eq(orphan_machine_label("/etc/machine-id", host, machine), s.machine_from_id);
	cr_assert_str_eq(s.machine, machine);
	cr_assert_eq(strlen(s.boot), 32, "boot '%s'", s.boot);
	cr_assert_eq(stat("/proc/self/ns/pid", &st), 0);
	cr_assert_eq(strtoull(s.pidns, NULL, 10), (unsigned long long)st.st_ino, "'%s'", s.pidns);
	cr_assert_eq(backend_owner_of(getpid(), owner, sizeof(owner)), 0);
	cr_assert_str_eq(s.owner, owner);
	cr_assert(s.boot_start > 0 && s.boot_start <= now, "boot start %lld",
		  (long long)s.boot_start);
	cr_assert(strlen(s.host) > 0 && !strpbrk(s.host, " \t\n\"\\"), "host '%s'", s.host);
}

Test(pure, created_at_times)
{
	const struct {
		const char *s;
		time_t want;
	} ok[] = {
		{ "2024-10-01T12:00:00Z", 1727784000 },
		{ "2024-10-01T12:00:00.123Z", 1727784000 },
		{ "2024-10-01T14:30:00+02:30", 1727784000 },
		{ "2024-10-01T07:00:00.5-05:00", 1727784000 },
	};
	const char *bad[] = { NULL,
			      "",
			      "2024-10-01",
			      "2024-10-01 12:00:00Z",
			      "2024-10-01T12:00:00",
			      "2024-10-01T12:00:00.Z",
			      "2024-10-01T12:00:00Zx",
			      "2024-13-01T12:00:00Z",
			      "2024-10-01T24:00:00Z",
			      "2024-10-01T12:00:00+2:00",
			      "+024-10-01T12:00:00Z",
			      "2024-1-01T12:00:00Z" };
	time_t t;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert(orphan_parse_time(ok[i].s, &t), "'%s' refused", ok[i].s);
		cr_assert_eq(t, ok[i].want, "'%s': %lld", ok[i].s, (long long)t);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(orphan_parse_time(bad[i], &t), "'%s' taken", bad[i]);
}

Test(pure, gc_deletes_only_what_it_proves_an_orphan)
{
	struct orphan_self me = {
		.machine = "9dfe9c85322440cb827e931c40e006aa",
		.machine_from_id = true,
		.boot = "86d09e1a500e4e3f9768d45b4819dd4a",
		.pidns = "4026531836-4026531834",
		.boot_start = 1727784000,
	};
	const char *sess = "0123456789abcdef0123456789abcdef",
		   *other = "4d6f8a1e1e5c4a0c8f0e8d1c0b9a8f7e";
	/* createdAt 2024-10-01T11:00:00Z and 12:00:01Z (orphan_parse_time: created_at_times) */
	const time_t before_t = 1727780400, after_t = 1727784001;
	const time_t *before = &before_t, *after = &after_t;
	char alive[64];
	struct {
		const char *what;
		struct orphan_labels l;
		enum orphan_verdict want;
	} cases[] = {
		{ "another machine, same everything else",
		  { sess, "999999999:1", other, me.boot, me.pidns, before },
		  ORPHAN_NOT_OURS },
		{ "no machine label (an older cordon's)",
		  { sess, "999999999:1", NULL, NULL, NULL, before },
		  ORPHAN_NOT_OURS },
		{ "an earlier boot",
		  { sess, "999999999:1", me.machine, other, NULL, before },
		  ORPHAN_GONE },
		{ "an earlier boot, a live-looking owner",
		  { sess, alive, me.machine, other, me.pidns, before },
		  ORPHAN_GONE },
		{ "another boot, made after this one began (a clone)",
		  { sess, "999999999:1", me.machine, other, me.pidns, after },
		  ORPHAN_UNKNOWN },
		{ "another boot, no createdAt (or one that cannot be read)",
		  { sess, "999999999:1", me.machine, other, me.pidns, NULL },
		  ORPHAN_UNKNOWN },
		{ "another boot, made as this one began",
		  { sess, "999999999:1", me.machine, other, me.pidns, &me.boot_start },
		  ORPHAN_UNKNOWN },
		{ "this boot, another pid namespace",
		  { sess, "999999999:1", me.machine, me.boot, "4026532000-4026531834", before },
		  ORPHAN_UNKNOWN },
		{ "this boot, the same pid namespace in another time namespace",
		  { sess, "999999999:1", me.machine, me.boot, "4026531836", before },
		  ORPHAN_UNKNOWN },
		{ "this boot, no pid namespace label",
		  { sess, "999999999:1", me.machine, me.boot, NULL, before },
		  ORPHAN_UNKNOWN },
		{ "this boot and namespace, the owner gone",
		  { sess, "999999999:1", me.machine, me.boot, me.pidns, before },
		  ORPHAN_GONE },
		{ "this boot and namespace, the owner's pid with another start time",
		  { sess, "1:999999999999", me.machine, me.boot, me.pidns, before },
		  ORPHAN_GONE },
		{ "this boot and namespace, the owner alive",
		  { sess, alive, me.machine, me.boot, me.pidns, before },
		  ORPHAN_ALIVE },
		{ "session not 32 hex",
		  { "0123456789ABCDEF0123456789ABCDEF", "999999999:1", me.machine, me.boot,
		    me.pidns, before },
		  ORPHAN_UNKNOWN },
		{ "no session",
		  { NULL, "999999999:1", me.machine, me.boot, me.pidns, before },
		  ORPHAN_UNKNOWN },
		{ "owner garbage",
		  { sess, "garbage", me.machine, me.boot, me.pidns, before },
		  ORPHAN_UNKNOWN },
		{ "owner pid 0",
		  { sess, "0:1", me.machine, me.boot, me.pidns, before },
		  ORPHAN_UNKNOWN },
		{ "owner with a tail",
		  { sess, "5:1x", me.machine, me.boot, me.pidns, before },
		  ORPHAN_UNKNOWN },
		{ "no boot label",
		  { sess, "999999999:1", me.machine, NULL, me.pidns, before },
		  ORPHAN_UNKNOWN },
		{ "boot label not hex",
		  { sess, "999999999:1", me.machine, "x", me.pidns, before },
		  ORPHAN_UNKNOWN },
	};

	cr_assert_eq(backend_owner_of(getpid(), alive, sizeof(alive)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(orphan_judge(&me, &cases[i].l), cases[i].want, "%s: %d", cases[i].what,
			     orphan_judge(&me, &cases[i].l));
	/* This process's own pid namespace: its owner label is checked against /proc. */
	{
		struct orphan_labels l = { sess, alive, me.machine, me.boot, me.pidns, before };

		/* From the hostname only: another boot may be another machine of this name. */
		me.machine_from_id = false;
		l.boot = other;
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_UNKNOWN);
		l.boot = me.boot;
		l.owner = "999999999:1";
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_GONE);
		/*
		 * A /proc that hides the processes this one may not trace (hidepid): an owner not
		 * found there may run, unseen; one found with another start time is gone.
		 */
		me.pids_hidden = true;
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_UNKNOWN);
		l.owner = "1:999999999999";
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_GONE);
		l.owner = alive;
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_ALIVE);
		me.pids_hidden = false;
		l.owner = "999999999:1";
		/* What this process cannot read, it cannot prove. */
		me.pidns[0] = '\0';
		l.pidns = "";
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_UNKNOWN);
		me.boot[0] = '\0';
		l.boot = "";
		cr_assert_eq(orphan_judge(&me, &l), ORPHAN_UNKNOWN);
	}
}

Test(pure, create_labels_say_machine_boot_and_namespace_over_the_profiles)
{
	struct cordon_profile *p = profile();
	struct daytona *d;
	json_t *b, *l;
	cordon_error e = { 0 };

	cordon_list_add(&p->daytona_labels, "team=ai", &e);
	cordon_list_add(&p->daytona_labels, "cordon.machine=forged", &e);
	cordon_list_add(&p->daytona_labels, "cordon.boot=forged", &e);
	cordon_list_add(&p->daytona_labels, "cordon.pidns=forged", &e);
	setenv("DAYTONA_API_KEY", "dtn_pure_test_key", 1);
	setenv("DAYTONA_API_URL", "http://127.0.0.1:9", 1);
	cr_assert_eq(dt_open(p, (void **)&d, &e), 0, "%s", e.msg);
	b = create_body(d);
	l = json_object_get(b, "labels");
	cr_assert_str_eq(json_string_value(json_object_get(l, "team")), "ai");
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.session")), d->session);
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.owner")), d->self.owner);
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.host")), d->self.host);
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.machine")), d->self.machine);
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.boot")), d->self.boot);
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.pidns")), d->self.pidns);
	json_decref(b);
	/* What cannot be read is left out, and a profile's label does not stand in for it. */
	d->self.boot[0] = d->self.pidns[0] = '\0';
	b = create_body(d);
	l = json_object_get(b, "labels");
	cr_assert_null(json_object_get(l, "cordon.boot"));
	cr_assert_null(json_object_get(l, "cordon.pidns"));
	cr_assert_str_eq(json_string_value(json_object_get(l, "cordon.machine")), d->self.machine);
	json_decref(b);
	daytona_free(d);
	cordon_profile_free(p);
}

Test(contract, gc_lists_by_the_machine_label)
{
	struct cordon_profile *p = profile();
	struct daytona *d = mock_handle(p);
	json_t *j = NULL;
	cordon_error e = { 0 };

	cr_assert_eq(list_labelled(d, ORPHAN_LABEL_MACHINE, d->self.machine, "cursor-1", &j, &e), 0,
		     "%s", e.msg);
	cr_assert(json_is_array(json_object_get(j, "items")));
	json_decref(j);
	daytona_free(d);
	cordon_profile_free(p);
}
