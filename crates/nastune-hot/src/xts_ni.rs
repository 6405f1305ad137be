//! AES-XTS on AES-NI with eight blocks in flight per round and the tweak
//! sequence doubled alongside in SSE registers.
//!
//! Why not `Xts<aes::Aes256>`: the `aes` crate dispatches per call and, in its
//! VAES-512 backend, pipelines only groups of 64 blocks, while the tweak
//! multiply, the two XORs and the trips through memory between them are scalar
//! work of the same order as the AES rounds themselves (0.53-0.65x
//! `openssl speed -evp aes-256-xts` at 16 KiB). Here each group of eight blocks
//! is loaded once, whitened with tweak ^ round key 0, taken through every round
//! together and stored once; the next eight tweaks are computed while the
//! rounds run, as OpenSSL's aesni_xts does.
//!
//! Only called after `is_x86_feature_detected!("aes")`; every function that
//! uses the instructions carries `#[target_feature(enable = "aes")]`.

#[cfg(target_arch = "x86")]
use core::arch::x86::*;
#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

const NI_XTS: &str = "nastune XTS on AES-NI, 8 blocks in flight";
const VAES_XTS: &str = "nastune XTS on VAES-512, 32 blocks in flight";

fn has_vaes512() -> bool {
    cfg!(target_arch = "x86_64")
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("vaes")
}

/// The engine `NiXts::new` would run here, `None` without AES-NI.
pub fn engine_here() -> Option<&'static str> {
    if !std::arch::is_x86_feature_detected!("aes") {
        return None;
    }
    Some(if has_vaes512() { VAES_XTS } else { NI_XTS })
}

/// Blocks whose rounds are interleaved: AES-NI's latency over its throughput on
/// current cores is 4-8, and eight blocks plus eight tweaks fit the 16 XMM
/// registers with the round key taken from memory.
const WIDE: usize = 8;

/// Expanded keys for one XTS key pair: data encrypt and decrypt schedules and
/// the tweak key's encrypt schedule; `rounds` is 10 (AES-128) or 14 (AES-256).
#[derive(Clone)]
pub struct NiXts {
    enc: [__m128i; 15],
    dec: [__m128i; 15],
    tweak: [__m128i; 15],
    rounds: usize,
    /// VAES with AVX-512 detected: 32 blocks at a time in ZMM registers first.
    vaes512: bool,
}

impl NiXts {
    /// `data` and `tweak` are 16 or 32 bytes each (checked by the caller).
    ///
    /// # Safety
    /// The CPU must have AES-NI.
    #[target_feature(enable = "aes")]
    pub unsafe fn new(data: &[u8], tweak: &[u8]) -> NiXts {
        let (enc, rounds) = expand(data);
        let (tweak, _) = expand(tweak);
        let mut dec = enc;
        // The equivalent inverse cipher: reversed keys, InvMixColumns on the middle ones.
        dec[0] = enc[rounds];
        for i in 1..rounds {
            dec[i] = _mm_aesimc_si128(enc[rounds - i]);
        }
        dec[rounds] = enc[0];
        NiXts {
            enc,
            dec,
            tweak,
            rounds,
            vaes512: has_vaes512(),
        }
    }

    /// Which loop runs, for the report.
    pub fn engine(&self) -> &'static str {
        if self.vaes512 { VAES_XTS } else { NI_XTS }
    }

    /// The eight-wide XMM loop alone, so tests reach it on a CPU with VAES.
    #[cfg(test)]
    pub fn without_vaes512(self) -> NiXts {
        NiXts {
            vaes512: false,
            ..self
        }
    }

    /// # Safety
    /// The CPU must have AES-NI; `buf.len()` is a non-zero multiple of 16.
    #[target_feature(enable = "aes")]
    pub unsafe fn crypt(&self, buf: &mut [u8], sector: u64, encrypt: bool) {
        let n = self.rounds;
        let mut t = [_mm_set_epi64x(0, sector as i64)];
        // SAFETY: AES-NI per this function's contract; `t` is one block.
        unsafe {
            group(
                t.as_mut_ptr() as *mut u8,
                &[_mm_setzero_si128()],
                &self.tweak,
                n,
                true,
            )
        };
        let mut t = t[0];
        let keys = if encrypt { &self.enc } else { &self.dec };
        let mut buf = buf;
        #[cfg(target_arch = "x86_64")]
        if self.vaes512 {
            // SAFETY: VAES and AVX-512F were detected when `self` was built.
            let done = unsafe { vaes512::crypt(buf, &mut t, keys, n, encrypt) };
            buf = &mut buf[done..];
        }
        let mut chunks = buf.chunks_exact_mut(16 * WIDE);
        for chunk in &mut chunks {
            let mut tw = [t; WIDE];
            for i in 1..WIDE {
                tw[i] = double(tw[i - 1]);
            }
            t = double(tw[WIDE - 1]);
            // SAFETY: AES-NI; `chunk` holds WIDE blocks.
            unsafe { group(chunk.as_mut_ptr(), &tw, keys, n, encrypt) };
        }
        for block in chunks.into_remainder().chunks_exact_mut(16) {
            // SAFETY: AES-NI; `block` is one block.
            unsafe { group(block.as_mut_ptr(), &[t], keys, n, encrypt) };
            t = double(t);
        }
    }
}

/// A register of one or more AES blocks and the instructions on it. The
/// methods are inlined into callers that enable the instructions' features.
trait Lane: Copy {
    /// Bytes per register.
    const BYTES: usize;
    /// # Safety
    /// `p` is valid for `BYTES` bytes; the CPU has the instructions.
    unsafe fn load(p: *const u8) -> Self;
    /// # Safety
    /// As `load`.
    unsafe fn store(self, p: *mut u8);
    /// # Safety
    /// The CPU has the instructions (all of the following too).
    unsafe fn xor(self, o: Self) -> Self;
    unsafe fn round(self, k: Self, enc: bool) -> Self;
    unsafe fn last_round(self, k: Self, enc: bool) -> Self;
}

/// `Lane` for a register type from its intrinsics: one impl per width, the
/// same shape, so written once.
macro_rules! lane {
    ($t:ty, $bytes:expr, $load:ident, $store:ident, $xor:ident,
     $enc:ident, $dec:ident, $enclast:ident, $declast:ident) => {
        impl crate::xts_ni::Lane for $t {
            const BYTES: usize = $bytes;
            #[inline(always)]
            unsafe fn load(p: *const u8) -> Self {
                // SAFETY: per the contract; unaligned.
                unsafe { $load(p as *const $t) }
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut u8) {
                // SAFETY: per the contract; unaligned.
                unsafe { $store(p as *mut $t, self) }
            }
            #[inline(always)]
            unsafe fn xor(self, o: Self) -> Self {
                // SAFETY: the CPU has the instructions, per the contract.
                unsafe { $xor(self, o) }
            }
            #[inline(always)]
            unsafe fn round(self, k: Self, enc: bool) -> Self {
                // SAFETY: as above.
                unsafe { if enc { $enc(self, k) } else { $dec(self, k) } }
            }
            #[inline(always)]
            unsafe fn last_round(self, k: Self, enc: bool) -> Self {
                // SAFETY: as above.
                unsafe {
                    if enc {
                        $enclast(self, k)
                    } else {
                        $declast(self, k)
                    }
                }
            }
        }
    };
}

lane!(
    __m128i,
    16,
    _mm_loadu_si128,
    _mm_storeu_si128,
    _mm_xor_si128,
    _mm_aesenc_si128,
    _mm_aesdec_si128,
    _mm_aesenclast_si128,
    _mm_aesdeclast_si128
);

/// `R` registers of blocks at `p` through XTS: whitened with their tweak and
/// round key 0, every round interleaved across the registers (the point: AES
/// latency hidden behind the other blocks), then XORed with the tweak again.
///
/// # Safety
/// `p` is valid for `R * L::BYTES` bytes; the CPU has `L`'s instructions.
#[inline(always)]
unsafe fn group<L: Lane, const R: usize>(
    p: *mut u8,
    tw: &[L; R],
    rk: &[L; 15],
    n: usize,
    enc: bool,
) {
    // SAFETY: per this function's contract, for every call below.
    unsafe {
        let mut b = *tw;
        for (i, x) in b.iter_mut().enumerate() {
            *x = L::load(p.add(i * L::BYTES)).xor(x.xor(rk[0]));
        }
        for k in &rk[1..n] {
            for x in &mut b {
                *x = x.round(*k, enc);
            }
        }
        for (i, x) in b.iter().enumerate() {
            x.last_round(rk[n], enc)
                .xor(tw[i])
                .store(p.add(i * L::BYTES));
        }
    }
}

/// Multiplication by x in GF(2^128), XTS convention (the register read as a
/// little-endian u128): each 64-bit half shifted left, the low half's top bit
/// carried into bit 64 and the high half's folded back as 0x87.
#[target_feature(enable = "sse2")]
#[inline]
fn double(t: __m128i) -> __m128i {
    // Sign of each 32-bit lane; lane 3 (bit 127) to lane 0, lane 1 (bit 63) to lane 2.
    let signs = _mm_shuffle_epi32::<0x13>(_mm_srai_epi32::<31>(t));
    let carry = _mm_and_si128(signs, _mm_set_epi32(0, 1, 0, 0x87));
    _mm_xor_si128(_mm_add_epi64(t, t), carry)
}

/// The AES key schedule (FIPS 197 5.2) with AESKEYGENASSIST; returns the round
/// keys and the number of rounds.
#[target_feature(enable = "aes")]
fn expand(key: &[u8]) -> ([__m128i; 15], usize) {
    let mut rk = [_mm_setzero_si128(); 15];
    // SAFETY: the caller passes 16 or 32 bytes; unaligned loads within them.
    let k0 = unsafe { _mm_loadu_si128(key.as_ptr() as *const __m128i) };
    rk[0] = k0;
    // Key `i` from key `i - back` and the assist of key `i - 1` (its `lane`
    // word: 0xff RotWord(SubWord) ^ rcon, 0xaa SubWord alone).
    macro_rules! key {
        ($i:expr, $back:expr, $rcon:expr, $lane:expr) => {
            rk[$i] = mix(
                rk[$i - $back],
                _mm_aeskeygenassist_si128::<$rcon>(rk[$i - 1]),
                $lane,
            );
        };
    }
    if key.len() == 16 {
        key!(1, 1, 0x01, 0xff);
        key!(2, 1, 0x02, 0xff);
        key!(3, 1, 0x04, 0xff);
        key!(4, 1, 0x08, 0xff);
        key!(5, 1, 0x10, 0xff);
        key!(6, 1, 0x20, 0xff);
        key!(7, 1, 0x40, 0xff);
        key!(8, 1, 0x80, 0xff);
        key!(9, 1, 0x1b, 0xff);
        key!(10, 1, 0x36, 0xff);
        return (rk, 10);
    }
    // SAFETY: 32 bytes: the second half.
    rk[1] = unsafe { _mm_loadu_si128(key.as_ptr().add(16) as *const __m128i) };
    // Even keys take rcon, odd ones SubWord alone.
    macro_rules! pairs {
        ($($i:expr => $rcon:expr),*) => {
            $(
                key!($i, 2, $rcon, 0xff);
                key!($i + 1, 2, 0, 0xaa);
            )*
        };
    }
    pairs!(2 => 0x01, 4 => 0x02, 6 => 0x04, 8 => 0x08, 10 => 0x10, 12 => 0x20);
    key!(14, 2, 0x40, 0xff);
    (rk, 14)
}

/// One key-schedule step: `prev` with its prefix XOR, XOR the assist word
/// selected by `lane` (0xff: RotWord(SubWord) ^ rcon; 0xaa: SubWord).
#[target_feature(enable = "sse2")]
#[inline]
fn mix(prev: __m128i, assist: __m128i, lane: i32) -> __m128i {
    let w = if lane == 0xff {
        _mm_shuffle_epi32::<0xff>(assist)
    } else {
        _mm_shuffle_epi32::<0xaa>(assist)
    };
    let mut k = prev;
    k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
    k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
    k = _mm_xor_si128(k, _mm_slli_si128::<4>(k));
    _mm_xor_si128(k, w)
}

/// The same loop four blocks to a ZMM register, eight registers in flight.
#[cfg(target_arch = "x86_64")]
mod vaes512 {
    use core::arch::x86_64::*;

    /// ZMM registers per group (4 blocks each): 32 blocks, with 8 tweak and
    /// 15 round-key registers that is all 32 of AVX-512's.
    const REGS: usize = 8;

    /// Whole groups of 32 blocks from the front of `buf`, `t` advanced past
    /// them; returns the bytes done (the caller finishes the rest).
    #[target_feature(enable = "avx512f,vaes,aes")]
    pub(super) fn crypt(
        buf: &mut [u8],
        t: &mut __m128i,
        keys: &[__m128i; 15],
        n: usize,
        enc: bool,
    ) -> usize {
        let mut rk = [_mm512_setzero_si512(); 15];
        for (z, k) in rk.iter_mut().zip(keys) {
            *z = _mm512_broadcast_i32x4(*k);
        }
        // Lanes t, t*x, t*x^2, t*x^3: each next register is this one times x^4.
        let t1 = super::double(*t);
        let t2 = super::double(t1);
        let t3 = super::double(t2);
        let mut tw = _mm512_inserti32x4::<3>(
            _mm512_inserti32x4::<2>(_mm512_inserti32x4::<1>(_mm512_castsi128_si512(*t), t1), t2),
            t3,
        );
        let mut chunks = buf.chunks_exact_mut(16 * 4 * REGS);
        let mut done = 0;
        for chunk in &mut chunks {
            let mut tws = [tw; REGS];
            for i in 1..REGS {
                tws[i] = times_x4(tws[i - 1]);
            }
            tw = times_x4(tws[REGS - 1]);
            // SAFETY: VAES and AVX-512F per this function's contract; `chunk`
            // holds REGS registers.
            unsafe { super::group(chunk.as_mut_ptr(), &tws, &rk, n, enc) };
            done += chunk.len();
        }
        *t = _mm512_castsi512_si128(tw);
        done
    }

    lane!(
        __m512i,
        64,
        _mm512_loadu_si512,
        _mm512_storeu_si512,
        _mm512_xor_si512,
        _mm512_aesenc_epi128,
        _mm512_aesdec_epi128,
        _mm512_aesenclast_epi128,
        _mm512_aesdeclast_epi128
    );

    /// Each 128-bit lane times x^4 in GF(2^128) (XTS convention): shifted left
    /// by 4 with the low half's top nibble carried up and the high half's folded
    /// back through the polynomial (n * 0x87 carry-less: n ^ n<<1 ^ n<<2 ^ n<<7).
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn times_x4(t: __m512i) -> __m512i {
        let top = _mm512_srli_epi64::<60>(t);
        // Swap the 64-bit halves of every lane: the low half's nibble lands
        // over the high half and the other way round.
        let swapped = _mm512_shuffle_epi32::<0x4e>(top);
        let up = _mm512_maskz_mov_epi64(0xaa, swapped);
        let wrap = _mm512_maskz_mov_epi64(0x55, swapped);
        let fold = _mm512_xor_si512(
            _mm512_xor_si512(wrap, _mm512_slli_epi64::<1>(wrap)),
            _mm512_xor_si512(_mm512_slli_epi64::<2>(wrap), _mm512_slli_epi64::<7>(wrap)),
        );
        _mm512_xor_si512(_mm512_slli_epi64::<4>(t), _mm512_xor_si512(up, fold))
    }
}
