#include "cpukern.h"

int cpukern_isa = CPUKERN_GENERIC;

int cpukern_detect(void) {
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	// libgcc's checks include the OS's support for saving the wide registers.
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma"))
		return CPUKERN_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return CPUKERN_AVX2;
#endif
	return CPUKERN_GENERIC;
}

void cpukern_set_isa(int isa) { cpukern_isa = isa; }
