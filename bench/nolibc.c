/* SPDX-License-Identifier: MIT */
/*
 * The start floor of a program without libc (make bench, bench/run.sh): exec and exit(0), no
 * start-up code at all. Against bench/empty.c it shows what glibc's start-up costs here.
 * Built with -nostdlib -static; x86-64 only (the bench skips the row elsewhere).
 */
void _start(void)
{
	__asm__ volatile("mov $60, %eax\n\txor %edi, %edi\n\tsyscall\n");
}
