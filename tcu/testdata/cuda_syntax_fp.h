// Declarations the fp kernels (kernels/fp_spmm.cu, fp_sddmm.cu, fp_dense.cu, fp_gat.cu) use beyond
// cuda_syntax.h, for TestFPKernelSyntax.
__device__ float __shfl_sync(unsigned, float, int, int w = 32);
__device__ float __shfl_xor_sync(unsigned, float, int, int w = 32);
// kernels/fp_dense.cu
__device__ double exp(double);
__device__ double log(double);
__device__ double sqrt(double);
// kernels/fp_gat.cu
__device__ float expf(float);
__device__ double expm1(double);
