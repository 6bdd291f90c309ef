/* The step probes (step_probe.h). The chain: each kernel is as small as a kernel can be (one store a block), so the
 * time per kernel is the boundary: launch, drain and ramp. The barrier: the textbook sense-reversing grid barrier
 * (an arrival counter and a generation, thread 0 of each block arrives with a device-scope atomic, the last one resets
 * the counter and bumps the generation, the others spin on it with acquire loads), the kind a persistent step would
 * run between its ops; and the flat one of cuda_common.cuh (grid_barrier_flat), one trip where the textbook one
 * makes three. The stream probe: a step's products through one shared-memory ring a block (step_probe.h). H200
 * (data/results/h200-2026-12-02-stream-probe): the ring streams at the read ceiling; a grid step between products
 * costs ~2 us with nothing in flight and 3-5 us behind the ring's copies; the 1B products at best 0.661 ms (64% of
 * their floor), the 8B 3.486 (87%); the tensor-core consumers slower than the FMA ones. */
#include "step_probe.h"

#include <cooperative_groups.h>

#include "cuda_common.cuh"
#include "ring.cuh"
#include "tma.cuh"

#define PROBE_THREADS 256

static __global__ void __launch_bounds__(PROBE_THREADS) chain_kernel(unsigned *words)
{
    if (threadIdx.x == 0) words[blockIdx.x] += 1u;
}

/* sync[0]: arrivals this generation; sync[1]: the generation. */
static __device__ __forceinline__ void grid_barrier(unsigned *sync)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned gen = ld_acquire_gpu(sync + 1);
        __threadfence();
        if (atomicAdd(sync, 1u) == gridDim.x - 1) {
            sync[0] = 0u;
            __threadfence();
            atomicAdd(sync + 1, 1u);
        } else {
            while (ld_acquire_gpu(sync + 1) == gen) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}

template <bool FLAT>
static __global__ void __launch_bounds__(PROBE_THREADS) barrier_kernel(unsigned *words, unsigned *sync, unsigned *errors,
                                                                        int rounds)
{
    __shared__ unsigned bad;
    unsigned passed = 0u;
    for (int r = 1; r <= rounds; r++) {
        if (threadIdx.x == 0) {
            bad = 0u;
            *(volatile unsigned *)(words + blockIdx.x) = (unsigned)r;
        }
        if (FLAT) grid_barrier_flat<false>(sync, ++passed * gridDim.x);
        else grid_barrier(sync);
        /* every block's word, read past L1 */
        for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
            if (ld_acquire_gpu(words + b) != (unsigned)r) atomicAdd(&bad, 1u);
        __syncthreads();
        if (threadIdx.x == 0 && bad) atomicAdd(errors, bad);
        /* nobody writes round r + 1 before everybody has read round r */
        if (FLAT) grid_barrier_flat<false>(sync, ++passed * gridDim.x);
        else grid_barrier(sync);
    }
}

extern "C" int orthros_probe_chain(unsigned *words, int blocks, int n, cudaStream_t stream)
{
    if (!words || blocks < 1 || n < 0) return orthros_error(ORTHROS_EINVAL, "probe chain: %d blocks, %d kernels", blocks, n);
    for (int i = 0; i < n; i++) {
        chain_kernel<<<blocks, PROBE_THREADS, 0, stream>>>(words);
        ORTHROS_CUDA_LAUNCH_CHECK("probe chain");
    }
    return 0;
}

extern "C" int orthros_probe_barrier(unsigned *words, unsigned *sync, unsigned *errors, int blocks, int rounds, int flat,
                                     cudaStream_t stream)
{
    if (!words || !sync || !errors || blocks < 1 || rounds < 0 || (flat && (long)blocks * 2 * rounds > 0xffffffffL))
        return orthros_error(ORTHROS_EINVAL, "probe barrier: %d blocks, %d rounds", blocks, rounds);
    void (*kernel)(unsigned *, unsigned *, unsigned *, int) = flat ? barrier_kernel<true> : barrier_kernel<false>;
    int dev = 0, coop = 0, sms = 0, per_sm = 0;
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, PROBE_THREADS, 0));
    if (!coop || blocks > sms * per_sm)
        return orthros_error(ORTHROS_EUNSUPPORTED, "probe barrier: %d blocks do not fit at once (%d SMs x %d, cooperative %d)",
                             blocks, sms, per_sm, coop);
    void *args[] = {&words, &sync, &errors, &rounds};
    ORTHROS_CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)kernel, dim3((unsigned)blocks),
                                                   dim3(PROBE_THREADS), args, 0, stream));
    return 0;
}

/* ---- the cluster probe (step_probe.h) ---- */
/* The SM's clock, in program order with the volatile loads and stores around it. */
static __device__ __forceinline__ long long cp_clock()
{
    long long t;
    asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(t)::"memory");
    return t;
}
static __device__ __forceinline__ unsigned cp_ld_local(uint32_t a)
{
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
    return v;
}
static __device__ __forceinline__ unsigned cp_ld_remote(uint32_t a)
{
    unsigned v;
    asm volatile("ld.shared::cluster.u32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
    return v;
}
/* The loaded value stored (so that the clock read after it waits for the load to land: a warp issues in order). */
static __device__ __forceinline__ void cp_use(uint32_t sink, unsigned v)
{
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sink), "r"(v) : "memory");
}

static __global__ void __launch_bounds__(PROBE_THREADS)
    cluster_probe_kernel(unsigned long long *cycles, unsigned *errors, int rounds)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ unsigned word, sink;
    __shared__ float4 part[PROBE_THREADS]; /* a rank's merged partial as v8's gather reads it: 4 floats a thread */
    __shared__ float2 pml[16];             /* and its rows' (max, sum) pairs */
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    const unsigned rank = cl.block_rank(), n = cl.num_blocks(), next = (rank + 1) % n;
    if (threadIdx.x == 0) word = rank + 1u;
    const float rv = (float)(rank + 1u);
    part[threadIdx.x] = make_float4(rv, rv, rv, rv);
    if (threadIdx.x < 16) pml[threadIdx.x] = make_float2(rv, rv);
    cl.sync();
    const uint32_t local = smem_addr(&word), snk = smem_addr(&sink);
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(next));
    unsigned long long acc[ORTHROS_CLUSTER_PROBE_SEGMENTS] = {}, first[ORTHROS_CLUSTER_PROBE_SEGMENTS] = {};
    unsigned bad = 0;
    for (int r = 0; r < rounds; r++) {
        long long t0 = cp_clock();
        cl.sync();                                   /* 0: cluster.sync (arrive.release, wait.acquire) */
        long long t1 = cp_clock();
        unsigned v = cp_ld_local(local);             /* 1: the first own shared load after it */
        cp_use(snk, v);
        long long t2 = cp_clock();
        bad += v != rank + 1u;
        cl.sync();
        long long t3 = cp_clock();
        v = cp_ld_remote(remote);                    /* 2: the first remote load after a cluster.sync */
        cp_use(snk, v);
        long long t4 = cp_clock();
        bad += v != next + 1u;
        cluster_arrive_relaxed_wait();
        long long t5 = cp_clock();                   /* 3: arrive.relaxed, then the wait */
        v = cp_ld_local(local);                      /* 4: the first own shared load after that */
        cp_use(snk, v);
        long long t6 = cp_clock();
        __syncthreads();
        long long t7 = cp_clock();
        v = cp_ld_local(local);                      /* 5: an own shared load after a block barrier alone */
        cp_use(snk, v);
        long long t8 = cp_clock();
        v = cp_ld_remote(remote);                    /* 6: a remote load with no barrier just before it */
        cp_use(snk, v);
        long long t9 = cp_clock();
        bad += v != next + 1u;
        /* 7: the release as a fence before a relaxed arrival (the PTX model's release pattern), then the wait */
        asm volatile("fence.acq_rel.cluster;\n" ::: "memory");
        cluster_arrive_relaxed_wait();
        long long t10 = cp_clock();
        v = cp_ld_remote(remote);                    /* 8: the first remote load after that */
        cp_use(snk, v);
        long long t11 = cp_clock();
        bad += v != next + 1u;
        /* 9: the gather's loads: every thread a 16-byte and an 8-byte load from each rank of the cluster, all
         * issued before any is used, then a block barrier (every rank at once: n times the traffic v8's rank 0 has);
         * 10: the same loads from the block's own memory (16 offsets), then the block barrier */
        auto gather = [&](bool remote) {
            float4 x[16];
            float2 ml[16];
#pragma unroll
            for (int q = 0; q < 16; q++)
                if (q < (int)n) {
                    x[q] = remote ? *cl.map_shared_rank(&part[threadIdx.x], (unsigned)q)
                                  : part[(threadIdx.x + 16u * q) % PROBE_THREADS];
                    ml[q] = remote ? *cl.map_shared_rank(&pml[threadIdx.x % 16], (unsigned)q) : pml[q];
                }
            float sum = 0.0f;
#pragma unroll
            for (int q = 0; q < 16; q++)
                if (q < (int)n) sum += x[q].x + ml[q].y;
            cp_use(snk, __float_as_uint(sum));
            __syncthreads();
            return sum;
        };
        __syncthreads();
        long long t12 = cp_clock();
        bad += gather(true) != (float)(n * (n + 1u)); /* sum over the ranks q of 2 (q + 1) */
        long long t13 = cp_clock();
        bad += gather(false) != 2.0f * rv * (float)n;
        long long t14 = cp_clock();
        const long long d[ORTHROS_CLUSTER_PROBE_SEGMENTS] = {t1 - t0,   t2 - t1,   t4 - t3,   t5 - t4,
                                                             t6 - t5,   t8 - t7,   t9 - t8,   t10 - t9,
                                                             t11 - t10, t13 - t12, t14 - t13};
#pragma unroll
        for (int k = 0; k < ORTHROS_CLUSTER_PROBE_SEGMENTS; k++) {
            if (r == 0) first[k] = (unsigned long long)d[k]; /* the code's first run: cold in the SM's caches */
            else acc[k] += (unsigned long long)d[k];
        }
    }
    cl.sync(); /* the last remote reads done before any block's shared memory goes */
    if (threadIdx.x == 0) {
        for (int k = 0; k < ORTHROS_CLUSTER_PROBE_SEGMENTS; k++) {
            atomicAdd(cycles + k, acc[k]);
            atomicAdd(cycles + ORTHROS_CLUSTER_PROBE_SEGMENTS + k, first[k]);
        }
        if (bad) atomicAdd(errors, bad);
    }
#endif
}

extern "C" int orthros_probe_cluster(unsigned long long *cycles, unsigned *errors, int clusters, int size, int rounds,
                                     cudaStream_t stream)
{
    if (!cycles || !errors || clusters < 1 || size < 2 || size > 16 || rounds < 1)
        return orthros_error(ORTHROS_EINVAL, "probe cluster: %d clusters of %d blocks, %d rounds (2-16 blocks)",
                             clusters, size, rounds);
    int dev = 0, major = 0;
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 9) return orthros_error(ORTHROS_EUNSUPPORTED, "probe cluster: thread-block clusters need sm_90");
    if (size > 8)
        ORTHROS_CUDA_CHECK(
            cudaFuncSetAttribute((const void *)cluster_probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1] = {};
    cfg.gridDim = dim3((unsigned)(clusters * size));
    cfg.blockDim = dim3(PROBE_THREADS);
    cfg.stream = stream;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)size;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    ORTHROS_CUDA_CHECK(cudaLaunchKernelEx(&cfg, cluster_probe_kernel, cycles, errors, rounds));
    return 0;
}

/* ---- the stream probe (step_probe.h) ---- */
#define SP_SB (32 * 1024)
#define SP_WARPS 16
#define SP_THREADS (SP_WARPS * 32 + 32)
#define SP_KB (SP_SB / 256 / SP_WARPS) /* 256-byte k-blocks a consumer warp a stage (tensor cores) */
#define SP_SEGS (SP_SB / 512 / SP_WARPS) /* 512-byte segments a consumer warp a stage (FMA) */

static __device__ __host__ __forceinline__ int sp_row0(int M, int b, int G) { return (int)((long long)M * b / G); }

/* A fixed-point sum (split 2) as the next product's input reads it (the test reads it the same way). */
static __device__ __forceinline__ float sp_fixed_value(unsigned long long a)
{
    return (float)((double)(long long)a * (1.0 / (double)(1ull << ORTHROS_STREAM_PROBE_FIX_SHIFT)));
}

/* Block b's rows [r0, r1) of product p, and a row's bytes: a split product's rows are its W's k-rows (W [K][M]), the
 * k-range of the pairs the block wrote in the product before; a product whose next one splits is dealt out in pairs
 * of rows; any other in contiguous rows. */
static __device__ __host__ __forceinline__ size_t sp_rows(const orthros_stream_product *list, int n, int p, int b,
                                                         int G, int *r0, int *r1)
{
    const orthros_stream_product &q = list[p];
    if (q.split) {
        *r0 = sp_row0(q.K, b, G), *r1 = sp_row0(q.K, b + 1, G);
        return (size_t)q.M * 2;
    }
    if (p + 1 < n && list[p + 1].split)
        *r0 = 2 * sp_row0(q.M / 2, b, G), *r1 = 2 * sp_row0(q.M / 2, b + 1, G);
    else
        *r0 = sp_row0(q.M, b, G), *r1 = sp_row0(q.M, b + 1, G);
    return (size_t)q.K * 2;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* The same on the tensor cores. */
static __device__ __forceinline__ void sp_consume_tc(const unsigned char *stage, const unsigned char *xs, uint32_t off,
                                                     uint32_t cnt, uint32_t rb, int warp, int lane, float *rowsum)
{
    /* a warp's SP_KB consecutive k-blocks (256 bytes: 128 elements of one row) of the stage on the tensor
     * cores: a k-block's sixteen 16-byte units u as A's rows 0-7 (units u and 8 + u side by side, rows 8-15
     * zero), x's matching units as B's columns, so D[i][i] is the unit pair's dot product; the diagonal summed
     * once a row. Rows and columns from one division a stage, every load issued first, two accumulators in
     * turn. */
    const uint32_t kb0 = (uint32_t)warp * SP_KB, base = off + kb0 * 256;
    uint32_t col = base % rb;
    int row = (int)(base / rb), rr[SP_KB];
    uint32_t a[SP_KB / 2][4], bx[SP_KB][2];
#pragma unroll
    for (int i = 0; i < SP_KB; i++) {
        const bool in = kb0 + i < cnt / 256;
        rr[i] = in ? row : -1;
        if (i % 2 == 0) { /* k-blocks i and i + 1: matrices 0-1 the first's units, 2-3 the next's (past the
                           * stage's end: stale bytes of the buffer, not used) */
            if (in)
                ldmatrix_x4(a[i / 2][0], a[i / 2][1], a[i / 2][2], a[i / 2][3],
                            stage + (size_t)(kb0 + i) * 256 + lane * 16);
            else
                a[i / 2][0] = a[i / 2][1] = a[i / 2][2] = a[i / 2][3] = 0u;
        }
        const unsigned char *xb = xs + col + (lane / 4) * 16 + (lane % 4) * 4;
        bx[i][0] = in ? *(const uint32_t *)xb : 0u;
        bx[i][1] = in ? *(const uint32_t *)(xb + 128) : 0u;
        col += 256;
        if (col == rb) col = 0, row++;
    }
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
    for (int i = 0; i < SP_KB; i++) {
        if (rr[i] < 0) break;
        const uint32_t af[4] = {i % 2 ? a[i / 2][2] : a[i / 2][0], 0u, i % 2 ? a[i / 2][3] : a[i / 2][1], 0u};
        mma_bf16_16816(acc[i % 2], af, bx[i]);
        if (i + 1 == SP_KB || rr[i + 1] != rr[i]) { /* the row ends in this warp's part: its diagonal out */
            const int g = lane / 4;
            float v = lane % 4 == g / 2 ? (g % 2 ? acc[0][1] + acc[1][1] : acc[0][0] + acc[1][0]) : 0.0f;
            for (int q = 16; q > 0; q >>= 1) v += __shfl_xor_sync(0xffffffffu, v, q);
            if (lane == 0) atomicAdd(&rowsum[rr[i]], v);
#pragma unroll
            for (int h = 0; h < 2; h++) acc[h][0] = acc[h][1] = acc[h][2] = acc[h][3] = 0.0f;
        }
    }
}
#endif

/* A split product's stage: k-rows of W^T, M bf16 each (rb bytes); the thread's 16-byte unit c of each row of its phase
 * ph (rows ph, ph + nph, ... of the block's range) times x[row] into its eight column sums. Units never straddle
 * stages (rb and the stages are multiples of 16 bytes), so a unit is in the stage or not; every load issued first. */
#define SP_SPLIT_ROWS 9 /* a thread's rows a stage at most: 2048 units a stage over more than 256 threads, + 1 */
static __device__ __forceinline__ void sp_consume_split(const unsigned char *stage, uint32_t off, uint32_t cnt,
                                                        uint32_t rb, int nph, int c, int ph, const float *x,
                                                        float (&acc)[8])
{
    const uint32_t row_lo = off / rb, row_hi = (off + cnt - 1) / rb;
    const uint32_t row0 = row_lo + (uint32_t)((ph - (int)(row_lo % (uint32_t)nph) + nph) % nph);
    uint4 w[SP_SPLIT_ROWS];
    float xv[SP_SPLIT_ROWS];
#pragma unroll
    for (int i = 0; i < SP_SPLIT_ROWS; i++) {
        const uint32_t row = row0 + (uint32_t)(i * nph), byte = row * rb + 16u * (uint32_t)c;
        const bool in = row <= row_hi && byte >= off && byte < off + cnt;
        w[i] = in ? *(const uint4 *)(stage + (byte - off)) : make_uint4(0u, 0u, 0u, 0u);
        xv[i] = in ? x[row] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < SP_SPLIT_ROWS; i++) {
        const uint32_t u[4] = {w[i].x, w[i].y, w[i].z, w[i].w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            acc[2 * j] += bf16x2_lo(u[j]) * xv[i];
            acc[2 * j + 1] += bf16x2_hi(u[j]) * xv[i];
        }
    }
}

template <int NS, int MODE>
static __global__ void __launch_bounds__(SP_THREADS, 1) stream_kernel(const orthros_stream_product *list, int n,
                                                                       const bf16 *x0, unsigned *sync,
                                                                       unsigned long long *stamps, int ahead)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char sp_smem[]; /* ring [NS][SB] | x [K] bf16 */
    __shared__ __align__(8) unsigned long long bars[2 * NS];  /* full, then empty */
    __shared__ float rowsum[ORTHROS_STREAM_PROBE_MAX_ROWS];
    __shared__ float xsplit[ORTHROS_STREAM_PROBE_MAX_ROWS / 2]; /* a split product's input: the block's own pairs */
    __shared__ volatile int staged; /* the last product whose input the consumers have staged */
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, G = gridDim.x, b = blockIdx.x;
    unsigned char *xs = sp_smem + (size_t)NS * SP_SB; /* a product's staged input; a split one's column sums */
    if (tid == 0) staged = -1;
    const uint32_t full0 = smem_addr(&bars[0]), empty0 = smem_addr(&bars[NS]);
    ring_init(full0, empty0, NS, SP_WARPS);
    for (int i = tid; i < ORTHROS_STREAM_PROBE_MAX_ROWS; i += SP_THREADS) rowsum[i] = 0.0f;
    /* each block zeroes its share of every split product's y: a barrier before the product (the launch checks
     * there is one) orders this before any block adds into it */
    for (int p = 0; p < n; p++)
        if (list[p].split)
            for (int m = sp_row0(list[p].M, b, G) + tid; m < sp_row0(list[p].M, b + 1, G); m += SP_THREADS) {
                if (list[p].split == 2) list[p].acc[m] = 0ull;
                else list[p].y[m] = 0.0f;
            }
    __syncthreads();

    if (warp == SP_WARPS) { /* the producer: every product's range, stage by stage, waiting only for free stages */
        uint32_t idx = 0;
        for (int p = 0; p < n; p++) {
            int r0, r1;
            const size_t rb = sp_rows(list, n, p, b, G, &r0, &r1);
            const unsigned char *src = (const unsigned char *)list[p].W + (size_t)r0 * rb;
            int issued = 0;
            for (size_t left = (size_t)(r1 - r0) * rb; left > 0; idx++, issued++) {
                const uint32_t cnt = left < SP_SB ? (uint32_t)left : SP_SB;
                const int slot = idx % NS;
                if (ahead >= 0 && issued >= ahead) /* no further into p before its input is staged */
                    while (staged < p) {
                    }
                mbar_wait(empty0 + 8 * slot, ((idx / NS) & 1) ^ 1);
                if (lane == 0) {
                    mbar_expect_tx(full0 + 8 * slot, cnt);
                    bulk_copy(smem_addr(sp_smem + (size_t)slot * SP_SB), src, cnt, full0 + 8 * slot);
                }
                __syncwarp();
                src += cnt, left -= cnt;
            }
        }
        return;
    }
    /* the consumers */
    uint32_t idx = 0;
    unsigned passed = 0;
    for (int p = 0; p < n; p++) {
        const int M = list[p].M, K = list[p].K;
        int r0, r1;
        const uint32_t rb = (uint32_t)sp_rows(list, n, p, b, G, &r0, &r1); /* at most 1024 rows of 32 KB */
        const bool split = list[p].split != 0;
        /* the input: the previous product's y where it waited, else x0; a split product's is in xsplit already */
        const bool dep = p > 0 && list[p - 1].wait;
        const float *yp = dep ? list[p - 1].y : NULL;
        const unsigned long long *ap = dep && list[p - 1].split == 2 ? list[p - 1].acc : NULL; /* fixed-point y */
        const int Mp = dep ? list[p - 1].M : 0, K0 = list[0].K;
        float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        const int cols = M / 8, nph = cols > 0 ? SP_WARPS * 32 / cols : 0; /* a split product's units and phases */
        if (split) {
            for (int m = tid; m < M; m += SP_WARPS * 32) ((float *)xs)[m] = 0.0f;
        } else if (dep && !ap && Mp >= K && (uintptr_t)yp % 16 == 0) {
            /* y's first K, four floats a thread at a time, rounds of 4 loads issued before their use */
            for (int k0 = 0; k0 < K; k0 += 4 * 4 * SP_WARPS * 32) {
                float4 v[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int k = k0 + 4 * (i * SP_WARPS * 32 + tid);
                    if (k < K) v[i] = __ldcg((const float4 *)(yp + k));
                }
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int k = k0 + 4 * (i * SP_WARPS * 32 + tid);
                    if (k < K)
                        *(uint2 *)((bf16 *)xs + k) =
                            make_uint2(pack_bf16x2(v[i].x, v[i].y), pack_bf16x2(v[i].z, v[i].w));
                }
            }
        } else {
            for (int k = tid; k < K; k += SP_WARPS * 32)
                ((bf16 *)xs)[k] = ap    ? f2bf(sp_fixed_value(__ldcg(ap + k % Mp)))
                                  : dep ? f2bf(__ldcg(yp + k % Mp))
                                        : x0[k % K0];
        }
        bar_sync(1, SP_WARPS * 32);
        if (tid == 0) {
            staged = p;
            if (stamps) stamps[(size_t)n * G + (size_t)p * G + b] = globaltimer_ns(); /* the input staged */
        }
        uint32_t off = 0;
        for (uint32_t left = (uint32_t)(r1 - r0) * rb; left > 0; idx++) {
            const uint32_t cnt = left < SP_SB ? (uint32_t)left : SP_SB;
            const int slot = idx % NS;
            mbar_wait(full0 + 8 * slot, (idx / NS) & 1);
            const unsigned char *stage = sp_smem + (size_t)slot * SP_SB;
            if (split) {
                if (MODE < 2 && tid < cols * nph)
                    sp_consume_split(stage, off, cnt, rb, nph, tid % cols, tid / cols, xsplit, acc);
            } else if (MODE == 0) {
                ring_consume_fma<SP_SEGS>(stage, xs, off, cnt, rb, warp, lane, rowsum);
            } else if (MODE == 1) {
                sp_consume_tc(stage, xs, off, cnt, rb, warp, lane, rowsum);
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(empty0 + 8 * slot);
            off += cnt, left -= cnt;
        }
        bar_sync(1, SP_WARPS * 32);
        if (split) { /* the phases' column sums in shared memory, then the block's partial added into y */
            float *part = (float *)xs;
            if (MODE < 2 && tid < cols * nph && r1 > r0)
#pragma unroll
                for (int i = 0; i < 8; i++) atomicAdd(&part[8 * (tid % cols) + i], acc[i]);
            bar_sync(1, SP_WARPS * 32);
            if (r1 > r0 && list[p].split == 2)
                for (int m = tid; m < M; m += SP_WARPS * 32) {
                    const long long v = __float2ll_rn(ldexpf(part[m], ORTHROS_STREAM_PROBE_FIX_SHIFT));
                    atomicAdd(list[p].acc + m, (unsigned long long)v);
                }
            else if (r1 > r0)
                for (int m = 4 * tid; m < M; m += 4 * SP_WARPS * 32)
                    atomicAdd((float4 *)(list[p].y + m), make_float4(part[m], part[m + 1], part[m + 2], part[m + 3]));
        } else {
            if (p + 1 < n && list[p + 1].split) { /* the next product's input: this block's pairs, bf16 */
                for (int j = tid; 2 * j < r1 - r0; j += SP_WARPS * 32)
                    xsplit[j] = bf2f(f2bf(rowsum[2 * j] * rowsum[2 * j + 1]));
                bar_sync(1, SP_WARPS * 32);
            }
            for (int r = tid; r < r1 - r0; r += SP_WARPS * 32) {
                list[p].y[r0 + r] = rowsum[r];
                rowsum[r] = 0.0f;
            }
        }
        bar_sync(1, SP_WARPS * 32);
        if (tid == 0) {
            if (stamps) stamps[(size_t)p * G + b] = globaltimer_ns(); /* y written */
            if (list[p].wait) { /* the flat barrier among the consumers: every block's y written before any reads */
                __threadfence();
                asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(sync) : "memory");
                const unsigned target = ++passed * (unsigned)G;
                while (ld_acquire_gpu(sync) < target) {
                }
            }
        }
        bar_sync(1, SP_WARPS * 32);
    }
#endif
}


extern "C" int orthros_probe_stream(const orthros_stream_product *list, orthros_stream_product *list_dev, int n,
                                    const void *x0, unsigned *sync, unsigned long long *stamps, int blocks, int stages,
                                    int mode, int ahead, cudaStream_t stream)
{
    if (!list || !list_dev || n < 1 || !x0 || !sync || blocks < 1)
        return orthros_error(ORTHROS_EINVAL, "probe stream: %d products, %d blocks", n, blocks);
    size_t xs_bytes = 0; /* the staged inputs (bf16), a split product's column sums (fp32) */
    int waited = 0, maxk = 0;
    for (int p = 0; p < n; p++) {
        const orthros_stream_product *q = &list[p], *prev = p > 0 ? &list[p - 1] : NULL;
        if (!q->W || !q->y || q->M < 1 || q->K < 1 || q->K > ORTHROS_STREAM_PROBE_MAX_K || (uintptr_t)q->W % 16)
            return orthros_error(ORTHROS_EINVAL, "probe stream: product %d (%d x %d) not taken (K up to %d, W 16-byte "
                                 "aligned)", p, q->M, q->K, ORTHROS_STREAM_PROBE_MAX_K);
        if (q->split) {
            if (!prev || prev->wait || prev->split || prev->M != 2 * q->K || q->M % 8 || q->M > 8 * SP_WARPS * 32 ||
                (uintptr_t)q->y % 16 || !waited || sp_row0(q->K, 1, blocks) + 1 > ORTHROS_STREAM_PROBE_MAX_ROWS / 2 ||
                q->split < 0 || q->split > 2 || (q->split == 2 && (!q->acc || (uintptr_t)q->acc % 8)))
                return orthros_error(ORTHROS_EINVAL, "probe stream: split product %d (%d x %d, split %d) not taken "
                                     "(split 1 or 2 after a product of 2K rows that does not wait or split, a product "
                                     "that waits before it, M a multiple of 8 up to %d, y 16-byte aligned, at most %d "
                                     "k a block; split 2 with acc)", p, q->M, q->K, q->split, 8 * SP_WARPS * 32,
                                     ORTHROS_STREAM_PROBE_MAX_ROWS / 2);
            if ((size_t)q->M * 4 > xs_bytes) xs_bytes = (size_t)q->M * 4;
        } else {
            const int most =
                p + 1 < n && list[p + 1].split ? 2 * (sp_row0(q->M / 2, 1, blocks) + 1) : sp_row0(q->M, 1, blocks) + 1;
            if (q->K % 256 || most > ORTHROS_STREAM_PROBE_MAX_ROWS)
                return orthros_error(ORTHROS_EINVAL, "probe stream: product %d (%d x %d) not taken (K a multiple of "
                                     "256, at most %d rows a block)", p, q->M, q->K, ORTHROS_STREAM_PROBE_MAX_ROWS);
            if ((size_t)q->K * 2 > xs_bytes) xs_bytes = (size_t)q->K * 2;
            if (q->K > maxk) maxk = q->K;
        }
        waited |= q->wait != 0;
    }
    typedef void (*sp_kernel)(const orthros_stream_product *, int, const bf16 *, unsigned *, unsigned long long *, int);
    static const sp_kernel kernels[3][3] = {{stream_kernel<2, 0>, stream_kernel<4, 0>, stream_kernel<6, 0>},
                                            {stream_kernel<2, 1>, stream_kernel<4, 1>, stream_kernel<6, 1>},
                                            {stream_kernel<2, 2>, stream_kernel<4, 2>, stream_kernel<6, 2>}};
    if ((stages != 2 && stages != 4 && stages != 6) || mode < 0 || mode > 2)
        return orthros_error(ORTHROS_EINVAL, "probe stream: %d stages (2, 4 or 6), consumers %d (0-2)", stages, mode);
    const sp_kernel kernel = kernels[mode][stages / 2 - 1];
    if (!orthros_cuda_sm90_available()) return orthros_error(ORTHROS_EUNSUPPORTED, "probe stream: needs sm_90");
    const size_t smem = (size_t)stages * SP_SB + xs_bytes;
    int dev = 0, coop = 0, sms = 0, per_sm = 0, optin = 0;
    ORTHROS_CUDA_CHECK(cudaGetDevice(&dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    cudaFuncAttributes fa;
    ORTHROS_CUDA_CHECK(cudaFuncGetAttributes(&fa, (const void *)kernel));
    if (smem + fa.sharedSizeBytes > (size_t)optin) /* the static shared memory (row sums, mbarriers) beside it */
        return orthros_error(ORTHROS_EINVAL, "probe stream: %d stages and K %d take %zu bytes of shared memory (%d)",
                             stages, maxk, smem + fa.sharedSizeBytes, optin);
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    ORTHROS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    ORTHROS_CUDA_CHECK(
        cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    ORTHROS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, SP_THREADS, smem));
    if (!coop || blocks > sms * per_sm)
        return orthros_error(ORTHROS_EUNSUPPORTED,
                             "probe stream: %d blocks do not fit at once (%d SMs x %d, cooperative %d)", blocks, sms,
                             per_sm, coop);
    ORTHROS_CUDA_CHECK(cudaMemcpyAsync(list_dev, list, (size_t)n * sizeof *list, cudaMemcpyHostToDevice, stream));
    const bf16 *x = (const bf16 *)x0;
    const orthros_stream_product *ld = list_dev;
    void *args[] = {(void *)&ld, &n, &x, &sync, &stamps, &ahead};
    ORTHROS_CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)kernel, dim3((unsigned)blocks), dim3(SP_THREADS), args,
                                                   smem, stream));
    return 0;
}
