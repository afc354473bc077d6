/* SPDX-License-Identifier: Apache-2.0 */
/* cpu.h: the pause hint for spin-wait loops. */
#ifndef EHT_UTIL_CPU_H
#define EHT_UTIL_CPU_H

/* Tells the core this is a spin loop: saves power and frees the sibling hyperthread. */
static inline void eht_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif
