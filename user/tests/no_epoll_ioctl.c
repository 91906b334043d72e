// SPDX-License-Identifier: GPL-2.0
/*
 * Runs a program as on a kernel without EPIOCSPARAMS: a seccomp filter
 * makes that ioctl fail with the errno given (ENOTTY, as from a kernel
 * before 6.9, EINVAL, or EOPNOTSUPP, as without CONFIG_NET_RX_BUSY_POLL);
 * everything else, EPIOCGPARAMS included, goes through.
 *
 * usage: no_epoll_ioctl ENOTTY|EINVAL|EOPNOTSUPP PROGRAM [ARG...]
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "epoll_params.h"

#if defined(__x86_64__)
#define AUDIT_ARCH_NATIVE	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_NATIVE	AUDIT_ARCH_AARCH64
#else
#error "no seccomp architecture for this machine"
#endif

int main(int argc, char **argv)
{
	int err;

	if (argc < 3)
		goto usage;
	if (!strcmp(argv[1], "ENOTTY"))
		err = ENOTTY;
	else if (!strcmp(argv[1], "EINVAL"))
		err = EINVAL;
	else if (!strcmp(argv[1], "EOPNOTSUPP"))
		err = EOPNOTSUPP;
	else
		goto usage;

	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_NATIVE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
		/* the command: low 32 bits of the second argument */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, EPIOCSPARAMS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
		perror("no_epoll_ioctl: seccomp");
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror("no_epoll_ioctl: exec");
	return 1;
usage:
	fprintf(stderr, "usage: no_epoll_ioctl ENOTTY|EINVAL|EOPNOTSUPP PROGRAM [ARG...]\n");
	return 2;
}
