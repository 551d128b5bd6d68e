/*
 * tproc.c - see tproc.h.
 */
#include "tests/fsx/tproc.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cluster/fixture.h"

pid_t tproc_start(char *const argv[], const char *cwd, const char *log)
{
	pid_t parent = getpid(), pid;
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert(fd >= 0, "%s: %s", log, strerror(errno));
	fflush(NULL);
	pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		/* die with the test; and if it died already, now */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(126);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		if (cwd && chdir(cwd))
			_exit(126);
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fd);
	return pid;
}

static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tproc_done(pid_t pid, int *status)
{
	int st;
	pid_t r;

	while ((r = waitpid(pid, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	cr_assert(r >= 0, "waitpid %d: %s", (int)pid, strerror(errno));
	if (r == 0)
		return 0;
	*status = status_of(st);
	return 1;
}

int tproc_wait(pid_t pid, int64_t deadline_ms)
{
	int status, st;

	while (tnow_ms() < deadline_ms) {
		if (tproc_done(pid, &status))
			return status;
		tsleep_ms(50);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return -ETIMEDOUT;
}

char *tproc_slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return NULL;
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			char *b = realloc(buf, cap + 1);
			cr_assert(b, "out of memory");
			buf = b;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

void tproc_dump(const char *log, size_t max)
{
	char *s = tproc_slurp(log);
	size_t len = s ? strlen(s) : 0;
	const char *from = s;

	if (len > max) {
		from = s + len - max;
		from = strchr(from, '\n') ? strchr(from, '\n') + 1 : from;
	}
	fprintf(stderr, "---- %s%s ----\n%s---- end of %s ----\n", log,
		len > max ? " (its end)" : "", from ? from : "(unreadable)\n", log);
	free(s);
}

char *tproc_last_line(const char *log, const char *prefix)
{
	char *s = tproc_slurp(log), *found = NULL;
	size_t plen = strlen(prefix);

	if (!s)
		return NULL;
	for (char *line = s, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)        /* a line still being written */
			break;
		if (!strncmp(line, prefix, plen))
			found = line;
		*nl = '\0';
	}
	found = found ? strdup(found) : NULL;
	free(s);
	return found;
}
