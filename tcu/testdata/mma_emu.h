// A CPU emulation of the CUDA bmm_mma.cu uses, for TestMMAKernelEmulated:
// the kernel source is compiled as C++ with this prelude and
// mma_emu_main.inc, and run on the CPU one block after another. Every
// thread of a block is a ucontext coroutine that runs until it waits at a
// barrier: __syncthreads (the block), or a warp collective (ldmatrix, mma,
// __ballot_sync: the 32 lanes of its warp), which each lane enters with its
// operands and leaves with its own results, in the PTX fragment layouts. A
// thread that reaches a different collective than its warp, or a block in
// which threads wait for ones that returned, aborts the run.
#define KERNEL_EMU 1
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <math.h>
#include <vector>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __shared__

struct emuDim {
  unsigned x, y, z;
};
// Not static: set by the scheduler before each resume, so no call may be
// assumed to leave them unchanged.
emuDim threadIdx, blockIdx, blockDim, gridDim;

template <class T>
static inline T min(T a, T b) {
  return a < b ? a : b;
}
template <class T>
static inline T max(T a, T b) {
  return a > b ? a : b;
}

// The rounding intrinsics as plain C++ (built with -ffp-contract=off).
static float __fmul_rn(float a, float b) { return a * b; }
static float __fadd_rn(float a, float b) { return a + b; }
static float __int2float_rn(int c) { return (float)c; }
static float __ull2float_rn(unsigned long long c) { return (float)c; }
static unsigned __float2uint_rz(float f) { return (unsigned)f; }
struct __attribute__((aligned(8), may_alias)) int2 {
  int x, y;
};
static int2 make_int2(int x, int y) { return {x, y}; }

// Shared memory: one buffer, reused by every block (poisoned at its start,
// as a real block finds whatever was there); a shared address is an
// offset into it. emuSmemBytes is the launch's dynamic size: copies and
// ldmatrix rows past it abort.
#define EMU_SMEM_CAP (256 << 10)
// C linkage: the kernel, extern "C", declares it in its body.
extern "C" {
__attribute__((aligned(128))) unsigned char smem[EMU_SMEM_CAP];
}
static unsigned emuSmemBytes;
// The device memory of the launch: cp.async sources must lie in it.
static const unsigned char *emuMemLo, *emuMemHi;

#define EMU_MAX_THREADS 1024
#define EMU_STACK (128 << 10)

struct emuCopy {
  unsigned saddr;
  const void* src;
  int bytes;
  long long group;
};

struct emuThread {
  ucontext_t ctx;
  bool done;
  const char* at;  // the barrier it waits at, for a deadlock report
  long long coll;  // warp collectives entered (their slot parity)
  long long groups;  // cp.async groups committed
  std::vector<emuCopy> pending;
  std::vector<char> stack;
};

// A barrier: the threads that arrived so far wait until the last of
// need arrives; all must have come from the same kind of collective and
// the same collective count.
struct emuBar {
  int arrived;
  const char* kind;
  long long seq;
  std::vector<int> waiters;
};

static ucontext_t emuSched;
static std::vector<emuThread> emuThr;
static std::vector<int> emuRunQ;
static size_t emuRunHead;
static int emuCur;
static emuBar emuWarpBar[EMU_MAX_THREADS / 32], emuBlockBar;
static std::function<void()> emuBody;

static void emuFail(const char* what) {
  fprintf(stderr, "block %u thread %u: %s\n", blockIdx.x, threadIdx.x, what);
  abort();
}

static void emuArrive(emuBar& b, int need, const char* kind, long long seq) {
  if (b.arrived == 0) {
    b.kind = kind;
    b.seq = seq;
  } else if (b.kind != kind || b.seq != seq) {
    fprintf(stderr, "block %u thread %u: at %s (collective %lld) while its group waits at %s (collective %lld)\n", blockIdx.x,
            threadIdx.x, kind, seq, b.kind, b.seq);
    abort();
  }
  if (++b.arrived == need) {
    b.arrived = 0;
    for (int w : b.waiters) emuRunQ.push_back(w);
    b.waiters.clear();
    return;
  }
  b.waiters.push_back(emuCur);
  emuThr[emuCur].at = kind;
  swapcontext(&emuThr[emuCur].ctx, &emuSched);
  emuThr[emuCur].at = nullptr;
}

static void __syncthreads() { emuArrive(emuBlockBar, (int)blockDim.x, "__syncthreads", 0); }

// Warp collectives: each lane writes its part into its warp's slots, all
// meet, each reads what it needs. Slots alternate between two sets, so one
// meeting per collective is enough: a lane can only write a set again
// after the next meeting, which every lane reaches after its reads.
struct emuSlot {
  unsigned w[6];
};
static emuSlot emuSlots[EMU_MAX_THREADS / 32][2][32];

static emuSlot* emuCollective(const char* kind, const emuSlot& mine) {
  emuThread& t = emuThr[emuCur];
  const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const long long seq = t.coll++;
  emuSlot* s = emuSlots[warp][seq & 1];
  s[lane] = mine;
  emuArrive(emuWarpBar[warp], 32, kind, seq);
  return s;
}

static unsigned __ballot_sync(unsigned mask, int pred) {
  if (mask != 0xffffffffu) emuFail("__ballot_sync with a partial mask");
  emuSlot mine = {};
  mine.w[0] = pred ? 1u : 0u;
  const emuSlot* s = emuCollective("__ballot_sync", mine);
  unsigned word = 0;
  for (int l = 0; l < 32; l++) word |= s[l].w[0] << l;
  return word;
}

static unsigned atomicOr(unsigned* p, unsigned v) {
  const unsigned old = *p;
  *p = old | v;
  return old;
}

static unsigned __cvta_generic_to_shared(const void* p) {
  const unsigned char* c = (const unsigned char*)p;
  if (c < smem || c > smem + EMU_SMEM_CAP) emuFail("__cvta_generic_to_shared of a pointer outside shared memory");
  return (unsigned)(c - smem);
}
static unsigned smem_u32(const void* p) { return __cvta_generic_to_shared(p); }

static void emuCheckShared(unsigned addr, const char* what) {
  if (addr % 16 != 0 || addr + 16 > emuSmemBytes) {
    fprintf(stderr, "block %u thread %u: %s at shared byte %u (launch has %u)\n", blockIdx.x, threadIdx.x, what, addr,
            emuSmemBytes);
    abort();
  }
}

// cp.async: queued, and done at the wait that retires its group (the
// latest a real copy may land), so that a stage read before its wait, or
// a buffer refilled while another warp still reads it, shows. Bytes past
// the source size are zeros.
static void cp_async16(unsigned saddr, const void* g, int bytes) {
  emuCheckShared(saddr, "cp.async");
  if (bytes < 0 || bytes > 16) emuFail("cp.async source size out of 0..16");
  const unsigned char* src = (const unsigned char*)g;
  if (bytes > 0 && (src < emuMemLo || src + bytes > emuMemHi)) emuFail("cp.async source outside the launch's memory");
  emuThread& t = emuThr[emuCur];
  t.pending.push_back({saddr, g, bytes, t.groups});
}
static void cp_async_commit() { emuThr[emuCur].groups++; }
static void emuCopiesDone(long long before) {
  std::vector<emuCopy>& p = emuThr[emuCur].pending;
  size_t keep = 0;
  for (size_t i = 0; i < p.size(); i++) {
    if (p[i].group < before) {
      memset(smem + p[i].saddr, 0, 16);
      if (p[i].bytes > 0) memcpy(smem + p[i].saddr, p[i].src, p[i].bytes);
    } else {
      p[keep++] = p[i];
    }
  }
  p.resize(keep);
}
template <int N>
static void cp_async_wait() {
  emuCopiesDone(emuThr[emuCur].groups - N);
}

// ldmatrix .m8n8 .b16, x4 or x2: lanes 8i..8i+7 address the rows of
// matrix i (16 bytes each); register i of lane l is 32-bit word l%4 of row
// l/4 of matrix i.
static void emuLdm(int nmat, unsigned* r, unsigned addr) {
  const unsigned lane = threadIdx.x & 31;
  emuSlot mine = {};
  if (lane < 8u * nmat) {
    emuCheckShared(addr, "ldmatrix row");
    memcpy(mine.w, smem + addr, 16);
  }
  const emuSlot* s = emuCollective(nmat == 4 ? "ldmatrix.x4" : "ldmatrix.x2", mine);
  for (int i = 0; i < nmat; i++) r[i] = s[i * 8 + (lane >> 2)].w[lane & 3];
}
static void ldm4(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3, unsigned addr) {
  unsigned r[4];
  emuLdm(4, r, addr);
  r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
static void ldm2(unsigned& r0, unsigned& r1, unsigned addr) {
  unsigned r[2];
  emuLdm(2, r, addr);
  r0 = r[0], r1 = r[1];
}

// mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc: with
// g = lane/4, t = lane%4, a0..a3 hold A's row g bits [32t, 32t+32), row
// g+8 the same bits, row g bits 128 + [32t, 32t+32), row g+8 those; b0, b1
// B's column g bits [32t, 32t+32) and 128 + [32t, 32t+32); c0..c3 are
// D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]. Bit i of a register is
// element i.
static void bmma(int* c, const unsigned* a, const unsigned* b) {
  const unsigned lane = threadIdx.x & 31;
  emuSlot mine = {{a[0], a[1], a[2], a[3], b[0], b[1]}};
  const emuSlot* s = emuCollective("mma.m16n8k256.b1", mine);
  const int g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; i++) {
    const int row = g + (i >> 1) * 8, col = t * 2 + (i & 1);
    const int hi = row >= 8;
    int sum = 0;
    for (int q = 0; q < 4; q++) {
      const emuSlot& A = s[(row & 7) * 4 + q];
      const emuSlot& B = s[col * 4 + q];
      sum += __builtin_popcount(A.w[hi] & B.w[4]) + __builtin_popcount(A.w[2 + hi] & B.w[5]);
    }
    c[i] = (int)((unsigned)c[i] + (unsigned)sum);
  }
}

static void emuThreadMain() {
  emuBody();
  emuCopiesDone(emuThr[emuCur].groups + 1);  // copies never waited for land anyway
  emuThr[emuCur].done = true;
  swapcontext(&emuThr[emuCur].ctx, &emuSched);
}

// emuLaunch runs body over a grid of blocks of threads, with smemBytes
// of dynamic shared memory, one block at a time.
static void emuLaunch(unsigned blocks, unsigned threads, unsigned smemBytes, std::function<void()> body) {
  if (threads == 0 || threads % 32 != 0 || threads > EMU_MAX_THREADS) {
    fprintf(stderr, "block of %u threads\n", threads);
    abort();
  }
  if (smemBytes > EMU_SMEM_CAP) {
    fprintf(stderr, "%u bytes of shared memory, the emulator has %u\n", smemBytes, EMU_SMEM_CAP);
    abort();
  }
  emuBody = body;
  emuSmemBytes = smemBytes;
  blockDim = {threads, 1, 1};
  gridDim = {blocks, 1, 1};
  emuThr.assign(threads, emuThread());
  for (auto& t : emuThr) t.stack.resize(EMU_STACK);
  for (unsigned b = 0; b < blocks; b++) {
    blockIdx = {b, 0, 0};
    memset(smem, 0xA5 ^ (b & 0xFF), EMU_SMEM_CAP);
    emuRunQ.clear();
    emuRunHead = 0;
    for (unsigned i = 0; i < threads; i++) {
      emuThread& t = emuThr[i];
      getcontext(&t.ctx);
      t.ctx.uc_stack.ss_sp = t.stack.data();
      t.ctx.uc_stack.ss_size = t.stack.size();
      t.ctx.uc_link = nullptr;
      t.done = false;
      t.at = nullptr;
      t.coll = t.groups = 0;
      t.pending.clear();
      makecontext(&t.ctx, emuThreadMain, 0);
      emuRunQ.push_back((int)i);
    }
    unsigned done = 0;
    while (emuRunHead < emuRunQ.size()) {
      const int i = emuRunQ[emuRunHead++];
      emuCur = i;
      threadIdx = {(unsigned)i, 0, 0};
      swapcontext(&emuSched, &emuThr[i].ctx);
      if (emuThr[i].done) done++;
    }
    if (done != threads) {
      fprintf(stderr, "block %u: %u of %u threads returned, the rest wait:", b, done, threads);
      for (unsigned i = 0; i < threads; i++)
        if (!emuThr[i].done) fprintf(stderr, " %u at %s;", i, emuThr[i].at ? emuThr[i].at : "?");
      fprintf(stderr, "\n");
      abort();
    }
  }
}

// emuRead reads one array of the driver's input: its byte length (int64),
// then its bytes.
static std::vector<char> emuRead(FILE* f) {
  long long n = 0;
  if (fread(&n, 8, 1, f) != 1) abort();
  std::vector<char> b(n);
  if (n > 0 && fread(b.data(), 1, n, f) != (size_t)n) abort();
  return b;
}

// The kernel's remaining inline asm is PROB_FROM_PARAM's empty statements
// (register copies to the compiler): no-ops here. Defined last, after the
// system headers.
#define asm(...) ((void)0)
