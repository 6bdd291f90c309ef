/* Causal GQA prefill attention, versions 5 to 7: wgmma (sm_90a) with TMA-fed K/V and warp specialization, in
 * the style of FlashAttention-3. Head dims 64 and 128. attn_full_prefill.cu dispatches here when version 5, 6 or 7
 * is selected and orthros_attn_prefill_wgmma_supported() holds, and to v4 otherwise.
 *
 * Versions, a line each (what each measured, the floors, the predictions and what was tried and dropped:
 * docs/kernels.md, "The wgmma versions"):
 *   v5  window == 0 with every key at its own slot (the full-attention layers, every chunk of a chunked prefill).
 *   v6  v5 plus sliding windows and ring caches whose key tiles wrap: the swa and hybrid windowed layers too.
 *   v7  a third consumer warpgroup at head dim 64, window 0 (192-row blocks): the sm_90a default.
 *
 * v6 launches, for window == 0 with every key at its own slot, the very same instantiation as v5
 * (attn_prefill_wgmma_kernel<D, false>); the rest runs <D, true>: (a) the block's keys start at its first row's
 * window start, s_begin = max(0, t_first - window + 1), tiles still aligned to the block's end; (b) the mask also
 * drops keys below each row's window start (lo = max(0, t - window + 1)), on every tile that starts before the
 * window start of the warp's last row; (c) the producer warpgroup, all 128 threads: a tile whose ring slots do
 * not wrap comes by TMA as in v5, one that wraps (slot ts mod cap + 128 > cap, about one per block once the ring
 * has wrapped, or every tile of a ring under 128 slots) is copied key by key with cp.async at slot (key mod cap),
 * into the same 128-byte-swizzled layout, then fenced to the async proxy (produce_ring). The producer keeps 32
 * registers there (consumers 232). The engine's ring size (cap = window + chunk - 1) needs no change.
 * v7 (<64, false, 3>): a block of 192 rows (3 x 64) and 512 threads: producer 24 registers, consumers 160
 * (setmaxnreg; (65536 - 128 x 24) / 384), the same K/V ring (3 stages, 120 KB with Q), so each K/V tile feeds
 * 1.5x the rows and a scheduler holds 3 consumer warps. No ping-pong (written for two warpgroups): the three
 * issue whenever ready, each keeping its intra-warpgroup overlap.
 *
 * v5's layouts below were derived from the PTX ISA (sections cited), checked by a host emulation, then on the
 * H200. v6's copied tiles write the layout the TMA writes: thread t copies the 16-byte chunk t % (d/8) of rows
 * t / (d/8), + 128 / (d/8), ... to region (chunk / 8) at swz128(row, chunk % 8), a bijection onto the tile.
 *
 * Work split. As in v1-v4 a "row" is one (query, head-of-the-GQA-group) pair of one kv head, so the g = Hq/Hkv
 * heads sharing a kv head share every K/V tile. A block takes BM = 128 consecutive rows of one (b, kv head)
 * (grid: x = B * Hkv, y = row tiles, the latest rows first since they have the most keys) and is 3 warpgroups:
 *   WG0, producer: setmaxnreg 24; one thread issues the TMA copies of the K and V tiles into an NST-deep ring
 *       (NST = 3 at d 64, 2 at d 128), each tile on its own "full" mbarrier (arrive.expect_tx + complete_tx),
 *       waiting on the tile's "empty" mbarrier (one arrival per consumer warp) before refilling a slot.
 *   WG1, WG2, consumers: setmaxnreg 240; each owns 64 of the 128 rows: S = Q K^T with wgmma m64n128k16 (Q and
 *       K both from shared memory), online softmax in registers, O += P V with wgmma m64n{d}k16 with P from
 *       registers (the S accumulator re-packed to bf16, no shared-memory round trip) and V from shared memory.
 * Pipelining (FA3 "intra-warpgroup overlap"): iteration j issues S_j = Q K_j^T and then O += P_{j-1} V_{j-1},
 * waits only for S_j (wgmma.wait_group 1), runs the softmax of S_j while P_{j-1} V_{j-1} is still on the
 * tensor cores, then waits for it, rescales O and packs P_j. That last wait sits at the top of the next
 * iteration: ptxas hoists a wgmma wait to the start of its basic block, and in one block with the softmax it
 * serialized them (seen in the SASS); now the ex2 of S_j lie between WARPGROUP.DEPBAR.LE gsb0 0x1 and 0x0.
 * Across the two consumer warpgroups (FA3
 * "ping-pong"): named barriers 3 and 4 hand the right to issue wgmma back and forth, so one warpgroup's GEMMs
 * run while the other does its softmax. Both consumers walk the same key tiles (the block's), so the numbers of
 * turns match: WG1 opens WG0's first turn, and skips its own last hand-over so no barrier is left half-arrived.
 *
 * Key tiles: BN = 128 keys. The block's keys are [0, s_end), s_end = (position of its last row) + 1, cut into
 * ceil(s_end / BN) tiles aligned to the END: tile j starts at ts0 + j BN, ts0 = s_end - ntiles BN in (-BN, 0].
 * So the diagonal (the keys only some rows see) sits in the last tile, and the only partial tile is the first,
 * whose negative key coordinates the TMA fills with zeros (out-of-bounds box elements are zero-filled, also
 * for negative coordinates; a key < 0 is masked). No tile reads a slot at or past s_end, so cache slots never
 * written (possibly NaN garbage, which 0 * NaN in P V would spread) are never read. Masking (key > t or
 * key < 0 -> -inf) runs only on tiles a warp's rows do not all see wholly: the first (if partial) and the
 * diagonal ones. Out-of-range rows (past n g) read zero Q (cp.async src-size 0), get t = -1 and are never
 * written. Lazy rescale as in v3/v4 (O is multiplied only when some row of the warp changed its max; the
 * factor is set to exactly 1 for an unchanged max rather than computed, since the contracted FFMA in
 * ex2(m_old * c - m_new * c) does not give exactly 0).
 * Softmax in the exp2 domain: p = ex2(s * log2(e)/sqrt(d) - m * log2(e)/sqrt(d)), one FFMA + ex2.approx.
 *
 * Shared memory (bytes): Q BM*d*2, K and V NST*BN*d*2 each, 4*NST mbarriers, + 1024 to align the base:
 * d 64: 16384 + 2*3*16384 = 114688 (+1120); d 128: 32768 + 2*2*32768 = 163840 (+1056). One block per SM.
 *
 * Layouts relied on (PTX ISA 9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"):
 *  - Accumulator D of wgmma .m64nNk16 .f32 (9.7.15.5.1.1.1, Figure "WGMMA .m64nNk16 register fragment layout
 *    for accumulator matrix D"): thread t of the warpgroup, warp w = t/32, lane l, register i in [0, N/2):
 *      row = 16 w + l/4 + 8 ((i/2) % 2),  col = 8 (i/4) + 2 (l%4) + (i%2).
 *    So each thread holds two rows (l/4 and l/4 + 8) and, per 8 columns, the pair (i, i+1) of each row.
 *  - A from registers, .m64nNk16 bf16 (same section, Figure "... layout for matrix A"): four .b32 registers,
 *    element a_e (e in [0,8)): row = 16 w + l/4 + 8 ((e/2) % 2), col = 8 (e/4) + 2 (l%4) + (e%2), i.e. the
 *    accumulator layout of an m64n16 tile. Hence P's A fragment for keys [16 kk, 16 kk + 16) is the S registers
 *    8 kk .. 8 kk + 7 packed pairwise: a[r] = bf16x2(s[8 kk + 2 r], s[8 kk + 2 r + 1]).
 *  - 128-byte swizzle (9.7.15.5.1.2 "Shared Memory Matrix Layout", and CU_TENSOR_MAP_SWIZZLE_128B): rows of 128
 *    bytes, 8-row atoms of 1024 bytes that start 1024-aligned; the 16-byte chunk c of row r sits at chunk
 *    c ^ (r % 8), i.e. byte-address bits [4,6] ^= bits [7,9]. A [rows][64] bf16 box copied by the TMA with that
 *    swizzle into a 1024-aligned buffer is exactly this layout; Q is written in it by cp.async (swz128 below).
 *  - Matrix descriptor (9.7.15.5.1.2.2): bits 0-13 start address >> 4, 16-29 leading byte offset >> 4, 32-45
 *    stride byte offset >> 4, 49-51 base offset (0: every atom is 1024-aligned), 62-63 swizzle (1 = 128B).
 *    K-major operands (Q as A, K as B of S = Q K^T; imm-trans 0): a row is one query/key, 64 elements per
 *    128-byte row, 8-row groups SBO = 1024 bytes apart, LBO unused for swizzled K-major (set to 16). The k-th
 *    16-element step inside a 64-element chunk starts 32 k bytes further (the hardware applies the XOR on the
 *    final address bits, as for every swizzled K-major GEMM that advances its descriptor this way); d 128 is two
 *    64-column chunks stored as separate [rows][64] regions.
 *    MN-major operand (V as B of O = P V; imm-trans-b 1, allowed for bf16): V is stored as TMA wrote it,
 *    [keys][64 d-columns] per 128-byte row, i.e. the canonical MN-major SW128 layout
 *    ((8,8,m),(8,k)):((1,8,LBO),(64,SBO)) in elements: 64 consecutive N (= d) elements per row, the next 64 d
 *    columns LBO = BN * 128 bytes away (the second d chunk at d 128), 8-key groups SBO = 1024 bytes apart; a
 *    16-key step is 2048 bytes further. No transposition while staging.
 *  - Ordering: wgmma.fence before each batch of wgmma (its accumulators and A registers were written by
 *    ordinary instructions); Q, written by cp.async (generic proxy), is published to the async proxy with
 *    fence.proxy.async.shared::cta before the warpgroup barrier; TMA writes and wgmma reads are both async
 *    proxy, ordered by the mbarriers; a stage is released (empty arrive, one per warp) only after
 *    wgmma.wait_group says the warp's reads of it are done.
 *
 * Build: the kernel body exists only where __CUDA_ARCH_FEAT_SM90_ALL is defined (an sm_90a target, e.g.
 * -DCMAKE_CUDA_ARCHITECTURES=90a); under plain sm_90 (CI) it is empty, and the host side finds that out with the
 * kernels' one probe (orthros_cuda_sm90a_available, cuda_common.cu), so it returns ORTHROS_EUNSUPPORTED instead of
 * launching an empty kernel. The tensor maps are encoded on the host with cuTensorMapEncodeTiled, reached
 * through cudaGetDriverEntryPointByVersion (no link against libcuda).
 * ptxas (CUDA 13.0, sm_90a): no spills, no stack; 168 registers at entry (384 threads, 1 block/SM), consumer
 * code up to R183 (d 128) / R151 (d 64) under its setmaxnreg 240; SASS has HGMMA.64x128x16 (S, both d; P V at
 * d 128) and HGMMA.64x64x16 (P V at d 64), UTMALDG.4D, SYNCS mbarrier ops; one "warpgroup.arrive injected"
 * note (C7519) at the last P V, where the loop's registers are merged. v6's windowed code: consumers up to R183
 * at d 128, producer up to R27; v7: 128 registers at entry, no spills. */
#include "attn_full_prefill_wgmma.cuh"

#include <math.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

/* Tile shapes of v5 (see the top comment); NWG_ = 3 is v7's (d 64: a 192-row block, no ping-pong). */
template <int D, int NWG_ = 2> struct wg_cfg {
    static constexpr int BN = 128;                  // keys per K/V tile
    static constexpr int NWG = NWG_;                // consumer warpgroups, 64 rows each
    static constexpr int BM = 64 * NWG;             // rows per block
    static constexpr int NST = D == 64 ? 3 : 2;     // K/V ring depth
    static constexpr int THREADS = 128 * (NWG + 1); // + the producer warpgroup
    static constexpr int Q_BYTES = BM * D * 2;
    static constexpr int KV_BYTES = BN * D * 2;     // one K (or V) tile
    static constexpr int OFF_K = Q_BYTES;
    static constexpr int OFF_V = OFF_K + NST * KV_BYTES;
    static constexpr int OFF_BAR = OFF_V + NST * KV_BYTES;
    static constexpr size_t SMEM = (size_t)OFF_BAR + 4 * NST * 8 + 1024;
    static_assert(SMEM <= 227 * 1024, "v5 tiles exceed the 227 KB of shared memory a block can have");
    static_assert(NWG == 2 || (NWG == 3 && D == 64), "two consumer warpgroups (ping-pong), or three at d 64");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

template <int D> static __device__ __forceinline__ void wgmma_rs(float (&o)[D / 2], const uint32_t (&a)[4], uint64_t db)
{
    if constexpr (D == 64)
        wgmma_rs_m64n64(o, a, db);
    else
        wgmma_rs_m64n128(o, a, db);
}

/* v6's producer: the whole producer warpgroup (128 threads). A tile whose ring slots do not wrap (slot
 * c = ts mod cap with c + BN <= cap; a negative ts with ts + BN <= cap, its keys < 0 zero-filled) comes by TMA
 * as in v5, issued by thread 0. A tile that wraps is copied by all 128 threads with cp.async, key by key at
 * slot (key mod cap) (zeros for keys < 0), into the same 128-byte-swizzled layout the TMA writes; once landed,
 * each thread fences its writes to the async proxy (wgmma reads them), the warpgroup meets at named barrier 5,
 * and thread 0 arrives on the stage's full barrier (count 1, as the expect_tx arrival of a TMA tile). Only
 * thread 0 touches the empty barriers, so the others never wait on a phase parity that could be two phases
 * old; for a copied tile they learn that the slot is free at the first barrier-5 meeting. */
template <int D>
static __device__ __forceinline__ void produce_ring(const CUtensorMap &tmK, const CUtensorMap &tmV,
                                                    const orthros_attn_full_prefill_params &p, int b, int kv, int ts0,
                                                    int ntiles, uint32_t sK, uint32_t sV, uint32_t bars)
{
    using C = wg_cfg<D>;
    constexpr int BN = C::BN, NST = C::NST, KVB = C::KV_BYTES, CH = D / 8, RSTEP = 128 / CH;
    const int ptid = threadIdx.x;
    if (ptid == 0) {
        asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmK) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmV) : "memory");
    }
    // This thread's 16-byte chunk of a key row and first row of a copied tile (the chunk is the same in every
    // row: 128 threads cover RSTEP rows of CH chunks per pass).
    const int ch = ptid % CH, r0 = ptid / CH;
    const uint32_t coff = (uint32_t)((ch / 8) * BN * 128);
    const size_t row_elems = (size_t)p.Hkv * D;
    const bf16 *kc = (const bf16 *)p.k_cache + (size_t)b * p.cap * row_elems + (size_t)kv * D + ch * 8;
    const bf16 *vc = (const bf16 *)p.v_cache + (size_t)b * p.cap * row_elems + (size_t)kv * D + ch * 8;
    for (int j = 0; j < ntiles; j++) {
        const int s = j % NST, ts = ts0 + j * BN;
        const uint32_t ph = (uint32_t)(j / NST) & 1u;
        const int c = ts >= 0 ? ts % p.cap : ts;
        const bool tma = c + BN <= p.cap;
#pragma unroll 1
        for (int which = 0; which < 2; which++) {
            const uint32_t full = bars + 8u * (uint32_t)(which * NST + s);
            const uint32_t empty = bars + 8u * (uint32_t)((2 + which) * NST + s);
            const uint32_t dst = (which ? sV : sK) + (uint32_t)(s * KVB);
            if (tma) {
                if (ptid == 0) {
                    mbar_wait(empty, ph ^ 1u);
                    mbar_expect_tx(full, KVB);
#pragma unroll
                    for (int cc = 0; cc < D / 64; cc++)
                        tma_load_4d(dst + cc * BN * 128, which ? &tmV : &tmK, full, 64 * cc, kv, c, b);
                }
            } else {
                if (ptid == 0) mbar_wait(empty, ph ^ 1u);
                __syncwarp();  // bar.sync is .aligned: warp 0 reconverged after its lane 0's wait
                bar_sync(5, 128);
                // The slot's last use was async-proxy (TMA writes, wgmma reads); these are generic-proxy writes.
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                const bf16 *base = which ? vc : kc;
                // One copy in flight per iteration is enough: cp.async does not wait, all land before wait_all.
#pragma unroll 1
                for (int r = r0; r < BN; r += RSTEP) {
                    const int key = ts + r;
                    const bf16 *src = key >= 0 ? base + (size_t)(key % p.cap) * row_elems : base;
                    cp_async16_s(dst + coff + swz128(r, ch % 8), src, key >= 0 ? 16 : 0);
                }
                asm volatile("cp.async.wait_all;\n" ::: "memory");
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                bar_sync(5, 128);
                if (ptid == 0) mbar_arrive(full);
            }
        }
    }
}

#endif /* __CUDA_ARCH_FEAT_SM90_ALL */

/* WIN (v6): sliding windows and ring caches whose tiles may wrap (see the top comment); false: v5 exactly. */
template <int D, bool WIN, int NWG_ = 2>
static __global__ void __launch_bounds__(wg_cfg<D, NWG_>::THREADS, 1)
    attn_prefill_wgmma_kernel(const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV,
                              const orthros_attn_full_prefill_params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using C = wg_cfg<D, NWG_>;
    // Two consumer warpgroups take turns at the tensor cores (named barriers 3 and 4); three (v7) run freely.
    constexpr bool PP = NWG_ == 2;
    constexpr int BN = C::BN, BM = C::BM, NST = C::NST, NWG = C::NWG, KVB = C::KV_BYTES;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const uint32_t sQ = base, sK = base + C::OFF_K, sV = base + C::OFF_V, bars = base + C::OFF_BAR;
    // mbarriers: full K, full V, empty K, empty V, NST of each.
    auto fullK = [&](int s) { return bars + 8u * (uint32_t)s; };
    auto fullV = [&](int s) { return bars + 8u * (uint32_t)(NST + s); };
    auto emptyK = [&](int s) { return bars + 8u * (uint32_t)(2 * NST + s); };
    auto emptyV = [&](int s) { return bars + 8u * (uint32_t)(3 * NST + s); };

    const int g = p.Hq / p.Hkv, rows = p.n * g;
    const int tile = gridDim.y - 1 - blockIdx.y, kv = blockIdx.x % p.Hkv, b = blockIdx.x / p.Hkv;
    const int r0 = tile * BM;
    const int pos0 = p.pos0[b];
    const int r_last = min(r0 + BM, rows) - 1;
    const int s_end = pos0 + r_last / g + 1;       // the block reads keys [s_begin, s_end)
    const int s_begin = WIN && p.window > 0 ? max(0, pos0 + r0 / g - p.window + 1) : 0;
    const int ntiles = (s_end - s_begin + BN - 1) / BN;
    const int ts0 = s_end - ntiles * BN;           // tiles end-aligned: tile j = [ts0 + j BN, ts0 + (j+1) BN)
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < NST; s++) {
            mbar_init(fullK(s), 1);
            mbar_init(fullV(s), 1);
            mbar_init(emptyK(s), 4 * NWG);
            mbar_init(emptyV(s), 4 * NWG);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {
        // ---- producer ----
        // v6's producer copies wrapping tiles itself: 32 registers (the consumers give up 8 each, 232).
        if constexpr (WIN)
            asm volatile("setmaxnreg.dec.sync.aligned.u32 32;\n" ::: "memory");
        else
            asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
        if constexpr (!WIN) {
            if (threadIdx.x == 0) {
                asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmK) : "memory");
                asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmV) : "memory");
                for (int j = 0; j < ntiles; j++) {
                    const int s = j % NST, ts = ts0 + j * BN;
                    const uint32_t ph = (uint32_t)(j / NST) & 1u;
                    mbar_wait(emptyK(s), ph ^ 1u);
                    mbar_expect_tx(fullK(s), KVB);
#pragma unroll
                    for (int c = 0; c < D / 64; c++)
                        tma_load_4d(sK + s * KVB + c * BN * 128, &tmK, fullK(s), 64 * c, kv, ts, b);
                    mbar_wait(emptyV(s), ph ^ 1u);
                    mbar_expect_tx(fullV(s), KVB);
#pragma unroll
                    for (int c = 0; c < D / 64; c++)
                        tma_load_4d(sV + s * KVB + c * BN * 128, &tmV, fullV(s), 64 * c, kv, ts, b);
                }
            }
        } else {
            produce_ring<D>(tmK, tmV, p, b, kv, ts0, ntiles, sK, sV, bars);
        }
    } else {
        // ---- consumers ----
        // Three consumer warpgroups (v7): (65536 - 128 x 24) / 384 leaves 160 registers each.
        if constexpr (NWG == 3)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 160;\n" ::: "memory");
        else if constexpr (WIN)
            asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        else
            asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
        const int cw = wg - 1, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;

        // This warpgroup's 64 rows of Q, swizzled, zeros past the last row.
        const int W = (p.Hq + 2 * p.Hkv) * D;
        const bf16 *qkv = (const bf16 *)p.qkv + (size_t)b * p.n * W;
#pragma unroll
        for (int it = 0; it < 64 * (D / 8) / 128; it++) {
            const int c = tid + it * 128, r = c / (D / 8), ch = c % (D / 8);
            const int rl = cw * 64 + r, rr = r0 + rl;
            const bf16 *src = qkv;
            const int ok = rr < rows;
            if (ok) src = qkv + (size_t)(rr / g) * W + (size_t)(kv * g + rr % g) * D + ch * 8;
            cp_async16_s(sQ + (ch / 8) * (BM * 128) + swz128(rl, ch % 8), src, ok ? 16 : 0);
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        bar_sync(PP ? 1 + cw : 6 + cw, 128);

        // Ping-pong: named barrier 3 + w is warpgroup w's turn to issue; WG 1 opens WG 0's first turn.
        if (PP && cw == 1) bar_arrive(3, 256);

        // The two rows this thread holds accumulator elements of, their positions (-1: past the end).
        const int rA = r0 + cw * 64 + warp * 16 + lane / 4, rB = rA + 8;
        const int tA = rA < rows ? pos0 + rA / g : -1, tB = rB < rows ? pos0 + rB / g : -1;
        // The first row of this warp (clamped to the block's last): tiles wholly at or before it need no mask.
        const int wt0 = pos0 + min(r0 + cw * 64 + warp * 16, r_last) / g;
        // WIN: the rows' window starts (0 without a window, and for rows past the end, whose t = -1 masks every
        // key anyway), and that of the warp's last row: a tile starting before it needs the mask.
        const int loA = WIN && p.window > 0 ? max(0, tA - p.window + 1) : 0;
        const int loB = WIN && p.window > 0 ? max(0, tB - p.window + 1) : 0;
        const int wlo1 = WIN && p.window > 0
                             ? max(0, pos0 + min(r0 + cw * 64 + warp * 16 + 15, r_last) / g - p.window + 1)
                             : 0;
        const float sl2 = 1.4426950408889634f / sqrtf((float)D);

        const uint64_t dQ = sw128_desc(sQ + cw * 64 * 128, 16, 1024);
        const uint64_t dK = sw128_desc(sK, 16, 1024);
        const uint64_t dV = sw128_desc(sV, BN * 128, 1024);

        float o[D / 2], s[BN / 2];
        uint32_t pf[BN / 16][4];
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[i] = 0.0f;
        float mA = -INFINITY, mB = -INFINITY, lA = 0.0f, lB = 0.0f, fA = 1.0f, fB = 1.0f;

        // S = Q K^T of stage st: d/16 steps of k = 16; the k-th starts (k/4) 64-column chunks and (k%4) 32 bytes in.
        auto issue_qk = [&](int st) {
            const uint64_t dk = dK + (uint64_t)((st * KVB) >> 4);
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
                const uint32_t qo = (uint32_t)((kk / 4) * BM * 128 + (kk % 4) * 32) >> 4;
                const uint32_t ko = (uint32_t)((kk / 4) * BN * 128 + (kk % 4) * 32) >> 4;
                wgmma_ss_m64n128(s, dQ + qo, dk + ko, kk > 0);
            }
        };
        // O += P V of stage st: BN/16 steps of 16 keys, 2048 bytes apart.
        auto issue_pv = [&](int st) {
            const uint64_t dv = dV + (uint64_t)((st * KVB) >> 4);
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) wgmma_rs<D>(o, pf[kk], dv + (uint64_t)((kk * 16 * 128) >> 4));
        };
        // Mask (only where needed), new row maxima, p = exp2 in place, row sums; fA/fB: the factors the old
        // accumulators must be multiplied by.
        auto softmax = [&](int ts) {
            if (ts < 0 || ts + BN - 1 > wt0 || (WIN && ts < wlo1)) {
                const int kb = ts + (lane % 4) * 2;
#pragma unroll
                for (int i = 0; i < BN / 2; i++) {
                    const int key = kb + (i / 4) * 8 + (i & 1);
                    if constexpr (WIN) {
                        if (key > ((i & 2) ? tB : tA) || key < ((i & 2) ? loB : loA)) s[i] = -INFINITY;
                    } else {
                        if (key > ((i & 2) ? tB : tA) || key < 0) s[i] = -INFINITY;
                    }
                }
            }
            float mxA = -INFINITY, mxB = -INFINITY;
#pragma unroll
            for (int i = 0; i < BN / 2; i += 4) {
                mxA = fmaxf(mxA, fmaxf(s[i], s[i + 1]));
                mxB = fmaxf(mxB, fmaxf(s[i + 2], s[i + 3]));
            }
            mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 1));
            mxA = fmaxf(mxA, __shfl_xor_sync(0xffffffffu, mxA, 2));
            mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 1));
            mxB = fmaxf(mxB, __shfl_xor_sync(0xffffffffu, mxB, 2));
            const float mnA = fmaxf(mA, mxA), mnB = fmaxf(mB, mxB);
            // A row with every key masked so far keeps m = -inf; 0 as its reference gives exp2 = 0, not NaN.
            const float uA = mnA == -INFINITY ? 0.0f : mnA * sl2, uB = mnB == -INFINITY ? 0.0f : mnB * sl2;
            // Exactly 1 when the max did not move, so that the lazy rescale can skip: ptxas contracts
            // mA * sl2 - uA into one FFMA, whose result is the rounding error of uA = mnA * sl2 (seen in the
            // SASS), not 0, so ex2 of it is in general not exactly 1 and the fA != 1 test nearly always fired.
            // (A row with every key masked so far has mA = mnA = -inf and o = l = 0: 1 is as good as 0 there.)
            fA = mA == mnA ? 1.0f : ex2_ftz(mA * sl2 - uA);
            fB = mB == mnB ? 1.0f : ex2_ftz(mB * sl2 - uB);
            mA = mnA;
            mB = mnB;
            float sA = 0.0f, sB = 0.0f;
#pragma unroll
            for (int i = 0; i < BN / 2; i += 4) {
                s[i] = ex2_ftz(fmaf(s[i], sl2, -uA));
                s[i + 1] = ex2_ftz(fmaf(s[i + 1], sl2, -uA));
                s[i + 2] = ex2_ftz(fmaf(s[i + 2], sl2, -uB));
                s[i + 3] = ex2_ftz(fmaf(s[i + 3], sl2, -uB));
                sA += s[i] + s[i + 1];
                sB += s[i + 2] + s[i + 3];
            }
            lA = lA * fA + sA;
            lB = lB * fB + sB;
        };
        // P's A fragments: keys [16 kk, 16 kk + 16) are S registers 8 kk .. 8 kk + 7, packed pairwise.
        auto pack = [&]() {
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
                for (int r = 0; r < 4; r++) pf[kk][r] = pack_bf16x2(s[8 * kk + 2 * r], s[8 * kk + 2 * r + 1]);
        };
        auto release = [&](uint32_t bar) {
            __syncwarp();
            if (lane == 0) mbar_arrive(bar);
        };

        // Once the row maxima settle, most tiles change none of the warp's 32 rows: skip the rescale then.
        auto rescale = [&]() {
            if (__any_sync(0xffffffffu, fA != 1.0f || fB != 1.0f)) {
#pragma unroll
                for (int i = 0; i < D / 2; i++) o[i] *= (i & 2) ? fB : fA;
            }
        };

        // Turn 0: S_0 (nothing to overlap it with).
        if (PP) bar_sync(3 + cw, 256);
        mbar_wait(fullK(0), 0);
        wg_fence();
        issue_qk(0);
        wg_commit();
        if (PP) bar_arrive(3 + (cw ^ 1), 256);
        wg_wait<0>();
        reg_fence(s);
        release(emptyK(0));
        softmax(ts0);

        // Turn j: S_j and P_{j-1} V_{j-1}; the softmax of S_j runs while P_{j-1} V_{j-1} is on the tensor cores.
        // The wait for that GEMM is at the top of the next iteration, not after the softmax in the same basic
        // block: ptxas hoists a wgmma wait to the top of its block (seen in the SASS), which would serialize them.
        // (The loop condition is uniform over the warpgroup, as wgmma.wait_group's .aligned requires.)
        for (int j = 1; j < ntiles; j++) {
            wg_wait<0>();  // P_{j-2} V_{j-2} (none pending at j = 1)
            reg_fence(o);
            reg_fence(pf);
            reg_fence(s);
            if (j >= 2) release(emptyV((j - 2) % NST));
            rescale();
            pack();
            const int sk = j % NST, sv = (j - 1) % NST;
            if (PP) bar_sync(3 + cw, 256);
            mbar_wait(fullK(sk), (uint32_t)(j / NST) & 1u);
            wg_fence();
            issue_qk(sk);
            wg_commit();
            mbar_wait(fullV(sv), (uint32_t)((j - 1) / NST) & 1u);
            issue_pv(sv);
            wg_commit();
            if (PP) bar_arrive(3 + (cw ^ 1), 256);
            wg_wait<1>();  // S_j
            reg_fence(s);
            release(emptyK(sk));
            softmax(ts0 + j * BN);
        }
        wg_wait<0>();
        reg_fence(o);
        reg_fence(pf);
        reg_fence(s);
        if (ntiles >= 2) release(emptyV((ntiles - 2) % NST));
        rescale();
        pack();

        // Last turn: P_{n-1} V_{n-1}. WG 1 hands over no more (WG 0 takes no further turn).
        {
            const int sv = (ntiles - 1) % NST;
            if (PP) bar_sync(3 + cw, 256);
            mbar_wait(fullV(sv), (uint32_t)((ntiles - 1) / NST) & 1u);
            wg_fence();
            issue_pv(sv);
            wg_commit();
            if (PP && cw == 0) bar_arrive(4, 256);
            wg_wait<0>();
            reg_fence(o);
            release(emptyV(sv));
        }

        lA += __shfl_xor_sync(0xffffffffu, lA, 1);
        lA += __shfl_xor_sync(0xffffffffu, lA, 2);
        lB += __shfl_xor_sync(0xffffffffu, lB, 1);
        lB += __shfl_xor_sync(0xffffffffu, lB, 2);
        const float iA = lA > 0.0f ? 1.0f / lA : 0.0f, iB = lB > 0.0f ? 1.0f / lB : 0.0f;
        bf16 *out = (bf16 *)p.out + (size_t)b * p.n * p.Hq * D;
        const int col = (lane % 4) * 2;
        if (rA < rows) {
            bf16 *dst = out + ((size_t)(rA / g) * p.Hq + kv * g + rA % g) * D + col;
#pragma unroll
            for (int c8 = 0; c8 < D / 8; c8++)
                *(__nv_bfloat162 *)(dst + c8 * 8) = __floats2bfloat162_rn(o[4 * c8] * iA, o[4 * c8 + 1] * iA);
        }
        if (rB < rows) {
            bf16 *dst = out + ((size_t)(rB / g) * p.Hq + kv * g + rB % g) * D + col;
#pragma unroll
            for (int c8 = 0; c8 < D / 8; c8++)
                *(__nv_bfloat162 *)(dst + c8 * 8) = __floats2bfloat162_rn(o[4 * c8 + 2] * iB, o[4 * c8 + 3] * iB);
        }
    }
#endif
}

/* ---- host side ---- */

/* Every key a chunk reads sits in its own slot (no window, the ring never wrapped): v5's kernel. */
static bool plain_slots(const orthros_attn_full_prefill_params *p)
{
    return p->window == 0 && p->max_keys > 0 && p->max_keys <= p->cap;
}

int orthros_attn_prefill_wgmma_supported(const orthros_attn_full_prefill_params *p, int version)
{
    if ((p->d != 64 && p->d != 128) || p->Hkv <= 0 || p->Hq % p->Hkv || p->cap <= 0 ||
        ((uintptr_t)p->k_cache % 16) || ((uintptr_t)p->v_cache % 16))
        return 0;
    return version >= 6 ? p->window >= 0 && p->max_keys > 0 : plain_slots(p);
}

template <int D, bool WIN, int NWG = 2>
static int launch_wgmma(const orthros_attn_full_prefill_params *p, cudaStream_t stream)
{
    using C = wg_cfg<D, NWG>;
    CUtensorMap tk, tv;
    int rc = tma_kv_cache_map(&tk, p->k_cache, p->B, p->cap, p->Hkv, D, C::BN, "attention prefill v5/v6");
    if (!rc) rc = tma_kv_cache_map(&tv, p->v_cache, p->B, p->cap, p->Hkv, D, C::BN, "attention prefill v5/v6");
    if (rc) return rc;
    ORTHROS_CUDA_CHECK(cudaFuncSetAttribute(attn_prefill_wgmma_kernel<D, WIN, NWG>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, (int)C::SMEM));
    int g = p->Hq / p->Hkv;
    dim3 grid(p->Hkv * p->B, ceil_div(p->n * g, C::BM));
    attn_prefill_wgmma_kernel<D, WIN, NWG><<<grid, C::THREADS, C::SMEM, stream>>>(tk, tv, *p);
    ORTHROS_CUDA_LAUNCH_CHECK("attn_prefill_wgmma_kernel");
    return 0;
}

int orthros_attn_prefill_wgmma_bf16(const orthros_attn_full_prefill_params *p, int version, cudaStream_t stream)
{
    if (!orthros_cuda_sm90a_available())
        return orthros_error(ORTHROS_EUNSUPPORTED,
                             "attention prefill v%d (wgmma): this binary was built without sm_90a code "
                             "(configure with -DCMAKE_CUDA_ARCHITECTURES=90a) or the device is not sm_90", version);
    if (!orthros_attn_prefill_wgmma_supported(p, version))
        return orthros_error(ORTHROS_EINVAL, "attention prefill v%d: unsupported shape (d %d, window %d, %d keys, cap %d)",
                             version, p->d, p->window, p->max_keys, p->cap);
    if (p->n <= 0 || p->B <= 0) return 0;
    /* The same kernel as v5 wherever v5 applies: v6 changes only the shapes v5 refuses; v7 runs three consumer
     * warpgroups there at head dim 64. */
    if (plain_slots(p)) {
        if (p->d == 128) return launch_wgmma<128, false>(p, stream);
        return version >= 7 ? launch_wgmma<64, false, 3>(p, stream) : launch_wgmma<64, false>(p, stream);
    }
    return p->d == 64 ? launch_wgmma<64, true>(p, stream) : launch_wgmma<128, true>(p, stream);
}
