// Declarations the fp kernels (kernels/fp_spmm.cu, fp_sddmm.cu) use beyond
// cuda_syntax.h, for TestFPKernelSyntax.
__device__ float __shfl_sync(unsigned, float, int, int w = 32);
__device__ float __shfl_xor_sync(unsigned, float, int, int w = 32);
