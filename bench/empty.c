/* SPDX-License-Identifier: MIT */
/*
 * The start floor of a static glibc program (make bench, bench/run.sh): exec plus glibc's own
 * start-up, which on x86 runs CPUID dozens of times to size the caches (init_cpu_features);
 * in a VM each CPUID is an exit to the hypervisor. cordon's CLI pays this once, like bwrap.
 */
int main(void)
{
	return 0;
}
