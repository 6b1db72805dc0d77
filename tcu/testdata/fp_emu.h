// A CPU emulation of the CUDA the fp kernels use, for TestFPKernelEmulated:
// the generated kernel source is compiled as C++ with this prelude and
// fp_emu_main.inc, and run on the CPU. Each lane is a ucontext coroutine;
// the lanes of one group (G lanes, the only ones that talk) run round-robin
// and meet at every shuffle (write, all yield, read, all yield), so the
// kernels' indexing, masks, shuffles and control flow run as written. A
// group whose lanes disagree on the number of shuffles (a divergence that
// would hang or corrupt a real warp) aborts the run.
//
// The dense kernels (fp_dense.cu, driven by fp_dense_emu_main.inc) share
// memory across a block: emuLaunchBlocks runs all threads of a block as
// lanes, __shared__ variables are statics (one block runs at a time), and
// a lane at __syncthreads waits until every lane of the block is there; a
// lane that returns while others wait at a barrier aborts the run.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)
#define __shared__ static

struct emuDim {
  unsigned x, y, z;
};
static emuDim threadIdx, blockIdx, blockDim, gridDim;

template <class T>
static inline T min(T a, T b) {
  return a < b ? a : b;
}
// Rounded steps, as the tests compile with -ffp-contract=off.
static float __fmul_rn(float a, float b) { return a * b; }
static float __fadd_rn(float a, float b) { return a + b; }
static inline float __int_as_float(long long i) {
  int32_t v = (int32_t)i;
  float f;
  memcpy(&f, &v, 4);
  return f;
}

struct emuLane {
  ucontext_t ctx;
  bool done;
  int shuffles;
  bool waiting;  // at __syncthreads
  std::vector<char> stack;
};
static ucontext_t emuSched;
static emuLane* emuCur;
static int emuG;  // lanes per group of the running launch
static long long emuSlots[1024];  // by thread: a block's warps shuffle apart
static bool emuBlockMode;
static std::function<void()> emuBody;

static void emuYield() { swapcontext(&emuCur->ctx, &emuSched); }

static void emuCheckMask(unsigned mask, int width) {
  if (width != emuG) {
    fprintf(stderr, "shuffle width %d in a launch of groups of %d\n", width, emuG);
    abort();
  }
  const unsigned lane = threadIdx.x & 31u;
  const unsigned want = width == 32 ? 0xffffffffu : ((1u << width) - 1u) << (lane & ~(unsigned)(width - 1));
  if (mask != want) {
    fprintf(stderr, "lane %u: shuffle mask %#x, its group is %#x\n", threadIdx.x, mask, want);
    abort();
  }
}

template <class T>
static T emuExchange(unsigned mask, T v, int src, int width) {
  emuCheckMask(mask, width);
  const int base = threadIdx.x - threadIdx.x % width;
  memcpy(&emuSlots[threadIdx.x], &v, sizeof(T));
  emuCur->shuffles++;
  emuYield();  // every lane has written
  T out;
  memcpy(&out, &emuSlots[base + src % width], sizeof(T));
  emuYield();  // every lane has read
  return out;
}

static int __shfl_sync(unsigned m, int v, int src, int w = 32) { return emuExchange(m, v, src, w); }
static float __shfl_sync(unsigned m, float v, int src, int w = 32) { return emuExchange(m, v, src, w); }
static float __shfl_xor_sync(unsigned m, float v, int x, int w = 32) {
  return emuExchange(m, v, (int)(threadIdx.x % w) ^ x, w);
}

static void __syncthreads() {
  if (!emuBlockMode) {
    fprintf(stderr, "__syncthreads in a launch of groups (emuLaunch): use emuLaunchBlocks\n");
    abort();
  }
  emuCur->waiting = true;
  emuYield();
}

static void emuLaneMain() {
  emuBody();
  emuCur->done = true;
  swapcontext(&emuCur->ctx, &emuSched);
}

// emuStart makes lane l run the launch's body from the start.
static void emuStart(emuLane& l) {
  getcontext(&l.ctx);
  l.ctx.uc_stack.ss_sp = l.stack.data();
  l.ctx.uc_stack.ss_size = l.stack.size();
  l.ctx.uc_link = nullptr;
  l.done = l.waiting = false;
  l.shuffles = 0;
  makecontext(&l.ctx, emuLaneMain, 0);
}

// emuLaunch runs body over a grid of gx × gy blocks of block threads, one
// group of g lanes at a time.
static void emuLaunch(unsigned gx, unsigned gy, unsigned block, int g, std::function<void()> body) {
  emuBody = body;
  emuG = g;
  blockDim = {block, 1, 1};
  gridDim = {gx, gy, 1};
  std::vector<emuLane> lanes(g);
  for (auto& l : lanes) l.stack.resize(256 << 10);
  for (unsigned by = 0; by < gy; by++) {
    for (unsigned bx = 0; bx < gx; bx++) {
      blockIdx = {bx, by, 0};
      for (unsigned base = 0; base < block; base += g) {
        for (auto& l : lanes) emuStart(l);
        for (;;) {
          int done = 0;
          for (int i = 0; i < g; i++) {
            if (lanes[i].done) {
              done++;
              continue;
            }
            threadIdx = {base + i, 0, 0};
            emuCur = &lanes[i];
            swapcontext(&emuSched, &lanes[i].ctx);
            if (lanes[i].done) done++;
          }
          if (done == g) break;
          if (done > 0) {
            fprintf(stderr, "block (%u,%u) group at thread %u: %d of %d lanes returned while the rest wait at a shuffle\n",
                    bx, by, base, done, g);
            abort();
          }
        }
      }
    }
  }
}

// emuLaunchBlocks runs body over a grid of gx × gy × gz blocks of block
// threads, all threads of a block at once (barriers, shared memory).
static void emuLaunchBlocks(unsigned gx, unsigned gy, unsigned gz, unsigned block, std::function<void()> body) {
  emuBody = body;
  emuG = 32;
  emuBlockMode = true;
  blockDim = {block, 1, 1};
  gridDim = {gx, gy, gz};
  std::vector<emuLane> lanes(block);
  for (auto& l : lanes) l.stack.resize(128 << 10);
  for (unsigned bz = 0; bz < gz; bz++) {
    for (unsigned by = 0; by < gy; by++) {
      for (unsigned bx = 0; bx < gx; bx++) {
        blockIdx = {bx, by, bz};
        for (auto& l : lanes) emuStart(l);
        for (;;) {
          int done = 0, waiting = 0;
          for (unsigned i = 0; i < block; i++) {
            if (!lanes[i].done && !lanes[i].waiting) {
              threadIdx = {i, 0, 0};
              emuCur = &lanes[i];
              swapcontext(&emuSched, &lanes[i].ctx);
            }
            done += lanes[i].done;
            waiting += lanes[i].waiting;
          }
          if (done == (int)block) break;
          if (done + waiting == (int)block) {
            if (done > 0) {
              fprintf(stderr, "block (%u,%u,%u): %d lanes returned while %d wait at __syncthreads\n", bx, by, bz, done,
                      waiting);
              abort();
            }
            for (auto& l : lanes) l.waiting = false;
          }
        }
      }
    }
  }
  emuBlockMode = false;
}

// emuRead reads one array of a driver's input: its byte length (int64),
// then its bytes.
static std::vector<char> emuRead(FILE* f) {
  long long n = 0;
  if (fread(&n, 8, 1, f) != 1) abort();
  std::vector<char> b(n);
  if (n > 0 && fread(b.data(), 1, n, f) != (size_t)n) abort();
  return b;
}
