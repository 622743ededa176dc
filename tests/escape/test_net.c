/* SPDX-License-Identifier: MIT */
/*
 * Class 5, network-policy bypass: with the default `network = none`, nothing of the host's
 * network is reachable: host loopback ports (v4, v6), the host's own address, the resolver,
 * abstract and path Unix sockets of host daemons (docker.sock-like), AF_VSOCK to the
 * hypervisor, raw/packet and exotic families. The listeners are real and the test checks that
 * no connection arrived.
 */
#define _GNU_SOURCE
#include "tests/escape/escape.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

/* A listening socket on the host; returns its fd, *port gets the port. */
static int listen_inet(int family, const char *addr, int *port)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	cr_assert(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		cr_assert(inet_pton(AF_INET6, addr, &a->sin6_addr) == 1);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		cr_assert(inet_pton(AF_INET, addr, &a->sin_addr) == 1);
		len = sizeof(*a);
	}
	cr_assert(bind(fd, (struct sockaddr *)&ss, len) == 0, "bind %s: %m", addr);
	cr_assert(listen(fd, 16) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&ss, &len) == 0);
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					 : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

static int listen_unix(const char *path, bool abstract)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	cr_assert(fd >= 0);
	if (abstract) {
		memcpy(a.sun_path + 1, path, strlen(path));
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	} else {
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		len = sizeof(a);
	}
	cr_assert(bind(fd, (struct sockaddr *)&a, len) == 0, "bind %s: %m", path);
	if (!abstract)
		cr_assert(chmod(path, 0777) == 0);
	cr_assert(listen(fd, 16) == 0);
	return fd;
}

/* No connection may have reached the host's listener. */
static void expect_no_connection(int lfd, const char *what)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	cr_expect(c < 0 && (errno == EAGAIN || errno == EWOULDBLOCK),
		  "%s: a connection from the run reached the host's listener", what);
	if (c >= 0)
		close(c);
	close(lfd);
}

static void tcp_case(struct esc *e, int family, const char *listen_addr, const char *target)
{
	struct tu_run r;
	int port, lfd = listen_inet(family, listen_addr, &port);
	const char *b1 = family == AF_INET6 ? "[" : "", *b2 = family == AF_INET6 ? "]" : "";

	esc_put_helper(e);
	esc_run(&r, NULL,
		"bash -c 'exec 3<>/dev/tcp/%s%s%s/%d && echo ESCAPED-DEVTCP'; ./h tcp %s %d; "
		"curl -s -m 2 http://%s%s%s:%d/ >/dev/null 2>&1; true",
		b1, target, b2, port, target, port, b1, target, b2, port);
	esc_expect_no_escape(&r, "TCP to the host");
	expect_no_connection(lfd, target);
	tu_run_free(&r);
}

ESC_CASE(escape_net, host_loopback_tcp4)
{
	tcp_case(e, AF_INET, "127.0.0.1", "127.0.0.1");
}

ESC_CASE(escape_net, host_loopback_tcp6)
{
	tcp_case(e, AF_INET6, "::1", "::1");
}

/* The host's own address on its real interface (a service bound to 0.0.0.0). */
static bool host_ipv4(char *buf, size_t len)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	cr_assert(getifaddrs(&ifa) == 0);
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
			  (socklen_t)len);
		found = true;
	}
	freeifaddrs(ifa);
	return found;
}

ESC_CASE(escape_net, host_address_tcp)
{
	char ip[64];

	cr_assert(host_ipv4(ip, sizeof(ip)), "the host has no IPv4 address besides loopback");
	tcp_case(e, AF_INET, "0.0.0.0", ip);
}

/* The resolver and the outside: a DNS datagram to the host's nameserver, TCP, getent. */
ESC_CASE(escape_net, dns_and_outside)
{
	char *conf = esc_read("/etc/resolv.conf", NULL), ns[64] = "1.1.1.1", *p;
	struct tu_run r;

	if (conf && (p = strstr(conf, "nameserver ")))
		sscanf(p + 11, "%63s", ns);
	free(conf);
	esc_put_helper(e);
	esc_run(&r, NULL,
		"./h udp %s 53; ./h tcp %s 53; ./h tcp 1.1.1.1 443; ./h udp 8.8.8.8 53; "
		"getent hosts cordon-esc.example.com && echo ESCAPED-DNS; true",
		ns, ns);
	esc_expect_no_escape(&r, "the network outside");
	tu_run_free(&r);
}

ESC_CASE(escape_net, host_abstract_unix_socket)
{
	char name[64];
	struct tu_run r;
	int lfd;

	snprintf(name, sizeof(name), "cordon-esc-%s", e->tag);
	lfd = listen_unix(name, true);
	esc_put_helper(e);
	esc_run(&r, NULL, "./h unix @%s; ./h unix @/tmp/.X11-unix/X0 >/dev/null; true", name);
	esc_expect_no_escape(&r, "abstract Unix socket");
	expect_no_connection(lfd, "abstract Unix socket");
	tu_run_free(&r);
}

ESC_CASE(escape_net, host_path_unix_socket)
{
	char path[128];
	struct tu_run r;
	int lfd;

	snprintf(path, sizeof(path), "/tmp/cordon-test-sock-%s", e->tag);
	lfd = listen_unix(path, false);
	esc_on_teardown("rm -f '%s'", path);
	esc_put_helper(e);
	esc_run(&r, NULL, "./h unix %s; true", path);
	esc_expect_no_escape(&r, "a Unix socket in the host's /tmp");
	expect_no_connection(lfd, "path Unix socket");
	tu_run_free(&r);
}

/*
 * docker.sock: absent inside. If this host has none, a daemon-like socket is put in /run (a
 * socket on a read-only bind still accepts connections, so /run must not be shown).
 */
ESC_CASE(escape_net, daemon_sockets)
{
	char path[128];
	struct tu_run r;
	int lfd;

	snprintf(path, sizeof(path), "/run/cordon-esc-%s.sock", e->tag);
	lfd = listen_unix(path, false);
	esc_on_teardown("rm -f '%s'", path);
	esc_put_helper(e);
	esc_run(&r, NULL,
		"for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock "
		"/run/dbus/system_bus_socket /run/systemd/private; do "
		"test -e $s && echo \"ESCAPED-PRESENT $s\"; ./h unix $s; done; ./h unix %s; true",
		path);
	esc_expect_no_escape(&r, "a host daemon's socket");
	expect_no_connection(lfd, "/run socket");
	tu_run_free(&r);
}

ESC_CASE(escape_net, vsock)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "./h sockets vsock");
	esc_expect_no_escape(&r, "AF_VSOCK");
	tu_run_free(&r);
}

ESC_CASE(escape_net, raw_and_packet_sockets)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "./h sockets raw; ping -c 1 -W 1 127.0.0.1 >/dev/null 2>&1; true");
	esc_expect_no_escape(&r, "AF_PACKET / SOCK_RAW");
	tu_run_free(&r);
}

ESC_CASE(escape_net, exotic_socket_families)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "./h sockets exotic");
	esc_expect_no_escape(&r, "netlink/alg/xdp/... families");
	tu_run_free(&r);
}

/*
 * socketpair of another family than AF_UNIX: it runs that family's create code before it finds
 * the family has no pairs (found in review: AF_VSOCK's transport and netlink audit/uevent were
 * reached that way; only socket() was filtered). Refused with EPERM first now.
 */
ESC_CASE(escape_net, socketpair_families)
{
	struct tu_run r;

	esc_put_helper(e);
	esc_run(&r, NULL, "./h sockets pairs");
	esc_expect_no_escape(&r, "socketpair of other families");
	cr_expect(e->control || strstr(r.out, "socketpair AF_VSOCK: blocked EPERM"), "%s", r.out);
	tu_run_free(&r);
}

/* Only lo: none of the host's interfaces or addresses. */
ESC_CASE(escape_net, only_loopback_interface)
{
	struct ifaddrs *ifa, *i;
	struct tu_run r;

	esc_run(&r, NULL, "ip -o link; ip -o addr; cat /proc/net/dev; true");
	cr_assert(getifaddrs(&ifa) == 0);
	for (i = ifa; i; i = i->ifa_next) {
		char addr[64] = "", needle[80];

		if (i->ifa_flags & IFF_LOOPBACK)
			continue;
		snprintf(needle, sizeof(needle), " %s:", i->ifa_name);
		esc_expect_absent(&r, needle, "a host interface is visible");
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
			inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr,
				  sizeof(addr));
			esc_expect_absent(&r, addr, "a host address is visible");
		}
	}
	freeifaddrs(ifa);
	cr_expect(strstr(r.out, "lo"), "no loopback interface inside:\n%s", r.out);
	tu_run_free(&r);
}

/* UTS namespace: the run may rename its own host, never the real one. */
ESC_CASE(escape_net, hostname)
{
	struct utsname before, after;
	struct tu_run r;
	int lock = esc_heavy_lock(); /* the variants must not see each other's changes */

	cr_assert(uname(&before) == 0);
	esc_run(&r, NULL, "hostname esc-%s; domainname esc-%s; true", e->tag + 3, e->tag + 3);
	cr_assert(uname(&after) == 0);
	cr_expect(!strcmp(before.nodename, after.nodename) &&
			  !strcmp(before.domainname, after.domainname),
		  "the host's hostname changed to %s", after.nodename);
	if (strcmp(before.nodename, after.nodename))
		(void)!sethostname(before.nodename, strlen(before.nodename));
	if (strcmp(before.domainname, after.domainname))
		(void)!setdomainname(before.domainname, strlen(before.domainname));
	esc_heavy_unlock(lock);
	tu_run_free(&r);
}
