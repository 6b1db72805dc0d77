// What agg.cu needs beyond fp_emu.h (included first) for
// TestAggKernelEmulated: the warp votes and integer shuffles, the
// round-to-nearest intrinsics as plain C++ arithmetic (the test compiles
// with -ffp-contract=off, so no step is fused), and atomics, which are
// plain here since lanes run one at a time. agg8 and agg32 run a whole
// block at a time (emuLaunchBlocks: their heavy rows meet at barriers);
// rowsums runs in groups of a warp (emuLaunch).
#define KERNEL_EMU 1
#define __noinline__ __attribute__((noinline))

template <class T>
static inline T max(T a, T b) {
  return a > b ? a : b;
}

static int __shfl_xor_sync(unsigned m, int v, int x, int w = 32) { return emuExchange(m, v, (int)(threadIdx.x % w) ^ x, w); }
// A full mask with a narrower width: segments of w lanes, each shifting
// within itself (a source past its segment's end gives the lane's own v).
static long long __shfl_down_sync(unsigned m, long long v, int d, int w = 32) {
  const int l = (int)(threadIdx.x & 31u);
  return emuExchange(m, v, l % w + d < w ? l + d : l, 32);
}
static unsigned __ballot_sync(unsigned m, int pred) {
  unsigned word = 0;
  for (int l = 0; l < 32; l++) {
    const int p = emuExchange(m, pred ? 1 : 0, l, 32);
    word |= (unsigned)(p & 1) << l;
  }
  return word;
}
static int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
struct uint2 {
  unsigned x, y;
};
static int __float_as_int(float f) {
  int i;
  memcpy(&i, &f, 4);
  return i;
}
// __syncwarp: every lane of the warp meets at an exchange.
static void __syncwarp(unsigned m = 0xffffffffu) { (void)emuExchange(m, 0, (int)(threadIdx.x & 31u), 32); }
static unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  s &= 31u;
  return s ? (lo >> s) | (hi << (32u - s)) : lo;
}
// __byte_perm: byte i of the result is byte (selector nibble i) & 7 of
// y:x, eight bytes with x's first (the kernels use no sign mode).
static unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long b = (unsigned long long)y << 32 | x;
  unsigned r = 0;
  for (int i = 0; i < 4; i++) r |= (unsigned)(b >> (8 * ((s >> (4 * i)) & 7u)) & 0xFFu) << (8 * i);
  return r;
}
static int atomicAdd(int* p, int v) {
  const int old = *p;
  *p = old + v;
  return old;
}
static unsigned atomicOr(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old | v;
  return old;
}
static double __dmul_rn(double a, double b) { return a * b; }
static double __dadd_rn(double a, double b) { return a + b; }
static float __int2float_rn(int c) { return (float)c; }
static float __ull2float_rn(unsigned long long c) { return (float)c; }
static float __ll2float_rn(long long c) { return (float)c; }
static double __ll2double_rn(long long c) { return (double)c; }
static float __double2float_rn(double d) { return (float)d; }
static unsigned __float2uint_rz(float f) { return (unsigned)f; }
static int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
struct int2 {
  int x, y;
};
static int2 make_int2(int x, int y) { return {x, y}; }
