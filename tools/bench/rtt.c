/*
 * rtt.c - sdfs-rtt: this machine's round-trip floor, printed beside the
 * benchmarks' ratios (tools/bench/fs). A 64-byte request and reply over
 * TCP on loopback, as every sdfs request travels, between two
 * processes: free to run on any CPU (what the daemons get) and both
 * pinned to one CPU (no cross-CPU wake-up). A namespace change through
 * the mount is at least two such round trips (mount -> mds, mds ->
 * the database's replicas) plus FUSE's own; a local filesystem's is
 * none. Not a test.
 *
 * usage: sdfs-rtt [--rounds N]   (prints "any-cpu-us same-cpu-us")
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int full(int fd, char *b, int writing)
{
	for (int done = 0; done < MSG;) {
		ssize_t n = writing ? write(fd, b + done, MSG - done)
				    : read(fd, b + done, MSG - done);

		if (n <= 0)
			return -1;
		done += (int)n;
	}
	return 0;
}

static void pin(int cpu)
{
	cpu_set_t s;

	if (cpu < 0)
		return;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

/* The mean of @rounds round trips, in us; < 0 on failure. */
static double measure(int rounds, int cpu)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), s, one = 1;
	char b[MSG] = { 0 };
	double t0, t;
	pid_t pid;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &al))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int c = accept(l, NULL, NULL);

		pin(cpu);
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (full(c, b, 0) == 0 && full(c, b, 1) == 0)
			;
		_exit(0);
	}
	close(l);
	pin(cpu);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int i = 0; i < rounds / 10; i++)   /* warm up */
		if (full(s, b, 1) || full(s, b, 0))
			break;
	t0 = now_us();
	for (int i = 0; i < rounds; i++)
		if (full(s, b, 1) || full(s, b, 0)) {
			rounds = 0;
			break;
		}
	t = now_us() - t0;
	close(s);
	waitpid(pid, NULL, 0);
	pin(-1);
	return rounds ? t / rounds : -1;
}

int main(int argc, char **argv)
{
	int rounds = 20000;

	if (argc == 3 && !strcmp(argv[1], "--rounds"))
		rounds = atoi(argv[2]);
	else if (argc != 1) {
		fprintf(stderr, "usage: sdfs-rtt [--rounds N]\n");
		return 2;
	}
	if (rounds < 10) {
		fprintf(stderr, "sdfs-rtt: --rounds must be at least 10\n");
		return 2;
	}
	double any = measure(rounds, -1), same = measure(rounds, 0);

	if (any < 0 || same < 0) {
		perror("sdfs-rtt");
		return 1;
	}
	printf("%.1f %.1f\n", any, same);
	return 0;
}
