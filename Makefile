# cordon: one non-recursive Makefile (SPEC §1).
#   make            build/cordon (and the library, tests' binaries on demand)
#   make check      install missing build deps, build, run every test (CI=true: a skip fails)
#   make demo       install missing build deps, build, run cordon on real examples
#   make install    PREFIX=/usr/local DESTDIR=...: the programs, profiles, man pages, Python
#                   module, systemd units and sysusers file
#   make bench      benchmarks against bare fork+exec, bubblewrap and the docker CLI (bench/RESULTS.md)
#   make format / format-check

VERSION   := 0.1.0
PREFIX    ?= /usr/local
DESTDIR   ?=
BINDIR    ?= $(PREFIX)/bin
SBINDIR   ?= $(PREFIX)/sbin
LIBEXECDIR ?= $(PREFIX)/libexec
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
# The Python client (package `cordon`, stdlib only): Debian's path for PREFIX=/usr, else the
# usual site-packages-less layout a PYTHONPATH can name.
PYDIR     ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python3/dist-packages)
UNITDIR   ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
MANDIR    ?= $(PREFIX)/share/man
DEB_VERSION ?= $(VERSION)
B         := build
MAN_PAGES := $(B)/man/cordon.1 $(B)/man/cordond.8 $(B)/man/cordon-profile.5
comma     := ,

CC        ?= cc
PKGS      := libseccomp libcap mount libcurl jansson libmicrohttpd inih libpcre2-8
# Debian packages the build and the tests need; `make deps` installs the missing ones.
DEB_DEPS  := gcc make pkg-config libseccomp-dev libcap-dev libmount-dev libcurl4-openssl-dev \
             libjansson-dev libmicrohttpd-dev libinih-dev libpcre2-dev \
             libcriterion-dev scdoc clang-format python3 libc6-dev strace iproute2 curl \
             python3-pip python3-setuptools python3-wheel time

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm

# The source tree's profiles, searched after the installed ones by a cordon built here;
# empty in a package (packaging/debian/rules), which must not search its build directory.
DEV_PROFILES ?= $(CURDIR)/profiles
HARDEN    := -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fstack-clash-protection -fPIE
WARN      := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow -Wformat=2 -Wvla
CFLAGS    ?= -O2 -g
ALL_CFLAGS = -std=gnu11 $(CFLAGS) $(WARN) $(HARDEN) -fvisibility=hidden -MMD -MP \
             -Iinclude -I. -DCORDON_VERSION_STR='"$(VERSION)"' \
             -DCORDON_SYSCONFDIR='"$(SYSCONFDIR)"' -DCORDON_BINDIR='"$(BINDIR)"' -DCORDON_LIBEXECDIR='"$(LIBEXECDIR)/cordon"' -DCORDON_SRCDIR='"$(CURDIR)"' -DCORDON_DEV_PROFILES='"$(DEV_PROFILES)"' $(PKG_CFLAGS)
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now -Wl,--as-needed $(LDFLAGS)
# Criterion re-executes the test binary for each test and hands it the parameter tables by
# value: pointers in them (strings of table rows) are only valid when the binary is not PIE.
TEST_LDFLAGS = -no-pie -Wl,-z,relro,-z,now $(LDFLAGS)

LIB_SRCS  := $(sort $(wildcard runtime/*.c policy/*.c backends/*.c backends/*/*.c))
LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/obj/%.o)
LIB       := $(B)/libcordon.a
CLI       := $(B)/cordon
# The CLI is also cordond's runner (runtime/daemon/runner.c): it carries the run half of the
# daemon's code.
CLI_SRCS  := $(sort $(wildcard runtime/cli/*.c)) runtime/daemon/body.c runtime/daemon/job.c \
             runtime/daemon/frame.c runtime/daemon/runner.c
DAEMON    := $(B)/cordond
REMOTE    := $(B)/cordon-remote
DAEMON_SRCS := $(sort $(wildcard runtime/daemon/*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
UNIT_SRCS := $(sort $(wildcard tests/unit/*.c))
INTEG_SRCS := $(sort $(wildcard tests/integration/*.c))
ESC_SRCS  := $(sort $(wildcard tests/escape/*.c))
TESTLIB_SRCS := $(sort $(wildcard tests/lib/*.c))
UNIT      := $(B)/tests/unit
INTEG     := $(B)/tests/integration
ESCAPE    := $(B)/tests/escape
DOCKER_SRCS := $(sort $(wildcard tests/docker/*.c))
DOCKERT   := $(B)/tests/docker
DAYTONA_TSRCS := $(sort $(wildcard tests/daytona/*.c))
DAYTONAT  := $(B)/tests/daytona

.PHONY: all check check-ag2 demo install deps bench fuzz clean format format-check lint tests deb man run-tests
.DEFAULT_GOAL := all

all: $(CLI) $(REMOTE) $(DAEMON)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# The seccomp program is compiled at build time (backends/local/seccomp.c says why): a
# generator built from the same source without the prebuilt program writes it.
SECCOMP_INC := $(B)/gen/seccomp_prebuilt.inc
$(B)/obj/backends/local/seccomp.o: private ALL_CFLAGS += -DCORDON_SECCOMP_PREBUILT='"$(SECCOMP_INC)"'
$(B)/obj/backends/local/seccomp.o: $(SECCOMP_INC)
$(B)/obj/gen/seccomp-dyn.o: backends/local/seccomp.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (generator)"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@
$(B)/seccomp-gen: $(B)/obj/tools/seccomp-gen.o $(B)/obj/gen/seccomp-dyn.o $(B)/obj/runtime/error.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)
$(SECCOMP_INC): $(B)/seccomp-gen
	@mkdir -p $(dir $@)
	$(B)/seccomp-gen $@.tmp && mv $@.tmp $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The CLI is exec'd for every command an agent runs: it is linked static-pie (ASLR and full
# RELRO kept), because loading and relocating six shared libraries cost about 1.3 ms of a
# 14 ms sandboxed start on the reference VM (bench/RESULTS.md). docs/security.md has the
# trade-off. cordond, a long-running service, stays dynamic.
CLI_PKGS  := libseccomp jansson inih libpcre2-8
CLI_LIBS   = $(shell pkg-config --static --libs $(CLI_PKGS) 2>/dev/null) -lm
$(CLI): $(CLI_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	$(CC) -static-pie $(filter-out -pie -Wl$(comma)--as-needed,$(ALL_LDFLAGS)) -o $@ $^ $(CLI_LIBS)

# cordon-remote: the same CLI, dynamic and with the Daytona backend, which needs libcurl (TLS)
# and so cannot be in the static cordon; cordon execs it for that backend (docs/daytona.md).
# The backend is pulled out of the library by name (backends/backend.c refers to it weakly).
WITH_DAYTONA := -Wl,-u,backend_daytona -Wl,-u,daytona_gc
$(REMOTE): $(CLI_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	$(CC) $(ALL_LDFLAGS) $(WITH_DAYTONA) -o $@ $^ $(PKG_LIBS) -lm

$(DAEMON): $(DAEMON_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	$(CC) $(ALL_LDFLAGS) $(WITH_DAYTONA) -o $@ $^ $(PKG_LIBS) -lpthread -lm

# libFuzzer targets (clang only, not part of check): make fuzz FUZZ_TIME=600 [FUZZ_TARGETS="fuzz_policy ..."]
# UBSan findings stop the run (-fno-sanitize-recover) as ASan's do: a report that only scrolls
# by in the log is a finding lost. clang is installed like the build's other dependencies.
FUZZ_TIME ?= 60
FUZZ_TARGETS ?= $(FUZZ_SRCS:tests/fuzz/%.c=%)
FUZZ_CFLAGS = -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	      $(filter -D% -I%,$(ALL_CFLAGS))
fuzz:
	@$(MAKE) --no-print-directory deps DEB_DEPS="$(DEB_DEPS) clang"
	@mkdir -p $(B)/fuzz
	@for n in $(FUZZ_TARGETS); do \
		clang $(FUZZ_CFLAGS) -o $(B)/fuzz/$$n tests/fuzz/$$n.c runtime/daemon/body.c $(LIB_SRCS) \
			$(PKG_LIBS) || exit 1; \
		mkdir -p $(B)/fuzz/$$n.corpus; \
		$(B)/fuzz/$$n -max_total_time=$(FUZZ_TIME) -max_len=65536 $(B)/fuzz/$$n.corpus tests/fuzz/corpus/$$n || exit 1; \
	done

# The fuzz corpora as a regression test, built with the ordinary compiler (tests/fuzz/driver.c).
.PRECIOUS: $(B)/obj/%.o
$(B)/tests/fuzz-%: $(B)/obj/tests/fuzz/%.o $(B)/obj/tests/fuzz/driver.o $(B)/obj/runtime/daemon/body.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(UNIT): $(UNIT_SRCS:%.c=$(B)/obj/%.o) $(TESTLIB_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lcriterion

$(INTEG): $(INTEG_SRCS:%.c=$(B)/obj/%.o) $(TESTLIB_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lcriterion

$(ESCAPE): $(ESC_SRCS:%.c=$(B)/obj/%.o) $(TESTLIB_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lcriterion

# The Docker backend's suite (tests/docker/run.sh starts a dockerd for it when none answers).
$(DOCKERT): $(DOCKER_SRCS:%.c=$(B)/obj/%.o) $(TESTLIB_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lcriterion

# The Daytona backend's suite (tests/daytona/run.sh starts Prism and the fake for it).
$(DAYTONAT): $(DAYTONA_TSRCS:%.c=$(B)/obj/%.o) $(TESTLIB_SRCS:%.c=$(B)/obj/%.o) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lcriterion

tests: $(CLI) $(REMOTE) $(DAEMON) $(if $(DAYTONA_TSRCS),$(DAYTONAT)) $(FUZZ_SRCS:tests/fuzz/%.c=$(B)/tests/fuzz-%) $(UNIT) $(if $(INTEG_SRCS),$(INTEG)) $(if $(ESC_SRCS),$(ESCAPE)) $(if $(DOCKER_SRCS),$(DOCKERT))

# Install whatever Debian package is missing; instant when everything is present.
deps:
	@missing=$$(for p in $(DEB_DEPS); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	missing=$$(echo $$missing); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing (about a minute the first time)"; \
		if [ "$$(id -u)" != 0 ]; then echo "deps: missing packages ($$missing); run as root" >&2; exit 1; fi; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; \
	fi

check: deps
	@$(MAKE) --no-print-directory format-check
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory tests
	@tests/run-all.sh $(B)

# AG2's own shell/sandbox tests against cordon: AG2_SRC=/path/to/ag2 make check-ag2
# (skips, exit 0 with the reason, when AG2 or its dependencies cannot be imported).
# With FAST_DEPENDS_SRC too, in a Debian 13 root (tests/ag2/debian13.sh): Debian 12 has no
# pydantic 2 for AG2.
check-ag2: $(CLI) $(DAEMON)
	@if [ -n "$$FAST_DEPENDS_SRC" ]; then tests/ag2/debian13.sh $(B); else tests/ag2/run.sh $(B); fi; \
	rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

demo: deps
	@$(MAKE) --no-print-directory all
	@tests/demo.sh $(B)/cordon

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/run.sh $(B)

# Man pages from their scdoc sources (packaging/man).
man: $(MAN_PAGES)
$(B)/man/%: packaging/man/%.scd
	@mkdir -p $(dir $@)
	scdoc <$< >$@

install: $(CLI) $(REMOTE) $(DAEMON) $(MAN_PAGES)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SYSCONFDIR)/cordon/profiles
	install -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/cordon
	install -d $(DESTDIR)$(LIBEXECDIR)/cordon
	install -m 0755 $(REMOTE) $(DESTDIR)$(LIBEXECDIR)/cordon/cordon-remote
	install -d $(DESTDIR)$(SBINDIR)
	install -m 0755 $(DAEMON) $(DESTDIR)$(SBINDIR)/cordond
	install -m 0644 profiles/*.conf $(DESTDIR)$(SYSCONFDIR)/cordon/profiles/
	cd clients/python && find cordon -name __pycache__ -prune -o -type f -print | \
		while read -r f; do install -D -m 0644 "$$f" "$(DESTDIR)$(PYDIR)/$$f" || exit 1; done
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR)
	sed 's|/usr/sbin/cordond|$(SBINDIR)/cordond|' packaging/systemd/cordond.service \
		>$(DESTDIR)$(UNITDIR)/cordond.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/cordond.service
	install -m 0644 packaging/systemd/cordond.socket $(DESTDIR)$(UNITDIR)/cordond.socket
	install -m 0644 packaging/debian/cordon.sysusers $(DESTDIR)$(SYSUSERSDIR)/cordon.conf
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 $(B)/man/cordon.1 $(DESTDIR)$(MANDIR)/man1/cordon.1
	install -m 0644 $(B)/man/cordon-profile.5 $(DESTDIR)$(MANDIR)/man5/cordon-profile.5
	install -m 0644 $(B)/man/cordond.8 $(DESTDIR)$(MANDIR)/man8/cordond.8

# The Debian package, with Debian's own tools: the source tree (what git tracks or would track)
# is copied to $(B)/deb/src, packaging/debian becomes its debian/, a changelog is written for
# DEB_VERSION, dpkg-buildpackage builds, lintian checks (any error or warning fails).
# Result: $(B)/deb/cordon_$(DEB_VERSION)_<arch>.deb. `make deb DEB_VERSION=0.1.1` builds a newer
# one (the package test's upgrade).
DEB_TOOLS := debhelper dpkg-dev lintian
DEB_ARCH   = $(shell dpkg --print-architecture)
DEB_FILE   = $(B)/deb/cordon_$(DEB_VERSION)_$(DEB_ARCH).deb
deb: deps
	@missing=$$(for p in $(DEB_TOOLS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
		grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "deb: installing $$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }; \
	fi
	@rm -rf $(B)/deb/src && mkdir -p $(B)/deb/src
	@{ git ls-files -co --exclude-standard 2>/dev/null || find . -path ./$(B) -prune -o -type f -print; } | \
		grep -v '^$(B)/' | tar -c --ignore-failed-read -T - 2>/dev/null | tar -x -C $(B)/deb/src
	@cp -r packaging/debian $(B)/deb/src/debian
	@printf 'cordon (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n -- cordon developers <maintainers@cordon-sandbox.org>  %s\n' \
		"$(DEB_VERSION)" "$$(git describe --always --dirty 2>/dev/null || echo a source tree)" \
		"$$(date -R)" >$(B)/deb/src/debian/changelog
	@echo "  DEB     $(DEB_FILE) (log: $(B)/deb/build.log)"
	@cd $(B)/deb/src && dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
		{ tail -30 ../build.log; exit 1; }
	@rm -rf $(B)/deb/src
	@echo "  LINTIAN $(DEB_FILE)"
	@lintian --fail-on error,warning $(DEB_FILE) >$(B)/deb/lintian.log 2>&1; rc=$$?; \
		grep -v '^running with root privileges' $(B)/deb/lintian.log; \
		[ $$rc -eq 0 ] && echo "lintian: clean (warnings and errors fail)"
	@ls $(DEB_FILE)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: ok"

# Every descriptor the product makes is close-on-exec from birth (tools/lint-cloexec.py says
# why); the lint must also still find the offences planted in tests/lint/cloexec-bad.c.
LINT_FILES = $(shell git ls-files 'backends/*.c' 'runtime/*.c' 'policy/*.c' 2>/dev/null)
lint:
	@python3 tools/lint-cloexec.py $(LINT_FILES)
	@n=$$(python3 tools/lint-cloexec.py tests/lint/cloexec-bad.c | wc -l); [ "$$n" -eq 23 ] || \
		{ echo "lint: tools/lint-cloexec.py found $$n of the 23 offences in tests/lint/cloexec-bad.c" >&2; exit 1; }
	@echo "lint: every descriptor is close-on-exec"

clean:
	rm -rf $(B)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)
