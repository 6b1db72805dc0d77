// Declarations of the CUDA built-ins the kernels use, for TestKernelSyntax:
// clang++ checks the kernel sources (-fsyntax-only, no CUDA toolkit) with
// this header in place of the toolkit's. Only the names and types matter;
// nothing here runs. The inline PTX in asm statements is not checked.
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __grid_constant__
#define __cluster_dims__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
struct uint3v { unsigned x, y, z; };
extern __device__ uint3v threadIdx, blockIdx, blockDim, gridDim;
__device__ void __syncthreads();
__device__ void __syncwarp(unsigned m = 0xffffffff);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __shfl_sync(unsigned, int, int, int w = 32);
__device__ int __shfl_xor_sync(unsigned, int, int, int w = 32);
__device__ unsigned __shfl_xor_sync(unsigned, unsigned, int, int w = 32);
__device__ float __int2float_rn(int);
__device__ float __uint2float_rn(unsigned);
__device__ float __fmul_rn(float, float);
__device__ float __fadd_rn(float, float);
__device__ float __fdiv_rn(float, float);
__device__ int __float2int_rd(float);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__device__ unsigned __float2uint_rd(float);
__device__ int __popc(unsigned);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_r(unsigned, unsigned, unsigned);
__device__ unsigned __brev(unsigned);
__device__ int atomicAdd(int*, int);
__device__ unsigned atomicOr(unsigned*, unsigned);
__device__ unsigned atomicAdd(unsigned*, unsigned);
__device__ void __threadfence();
__device__ float floorf(float);
__device__ float fminf(float, float);
__device__ float fmaxf(float, float);
__device__ unsigned __cvta_generic_to_shared(const void*);
struct int2 { int x, y; };
__device__ int2 make_int2(int, int);
struct uint2 { unsigned x, y; };
__device__ uint2 make_uint2(unsigned, unsigned);
template <class T> __device__ T min(T a, T b) { return a < b ? a : b; }
template <class T> __device__ T max(T a, T b) { return a > b ? a : b; }
__device__ float __ull2float_rn(unsigned long long);
__device__ unsigned __float2uint_rz(float);
#define __noinline__ __attribute__((noinline))
__device__ int atomicExch(int*, int);
__device__ unsigned atomicExch(unsigned*, unsigned);
// kernels/agg.cu
__device__ int __popcll(unsigned long long);
__device__ float __ll2float_rn(long long);
__device__ long long __shfl_down_sync(unsigned, long long, int, int w = 32);
__device__ float __int_as_float(int);
__device__ int __float_as_int(float);
__device__ double __dadd_rn(double, double);
__device__ double __dmul_rn(double, double);
__device__ double ldexp(double, int);
__device__ double __ll2double_rn(long long);
__device__ float __double2float_rn(double);
