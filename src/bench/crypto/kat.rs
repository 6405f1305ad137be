//! Known-answer tests for every cipher path: published vectors run through the
//! user-space code and, when the kernel has AF_ALG, through the kernel too
//! (`nastune bench crypto --self-test`). A benchmark of a cipher that computes
//! the wrong thing is worthless, so the same vectors guard both.

use serde::{Deserialize, Serialize};

use super::afalg::{self, Direction};
use super::kdf::Prf;
use super::kernel;
use super::userspace::{self, UserCipher};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail { detail: String },
    Skip { reason: String },
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KatOutcome {
    /// `user space` or `kernel (AF_ALG)`.
    pub path: String,
    pub vector: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s
        .bytes()
        .filter(u8::is_ascii_hexdigit)
        .map(|c| match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => c - b'A' + 10,
        })
        .collect();
    digits
        .chunks(2)
        .map(|p| p[0] << 4 | p.get(1).copied().unwrap_or(0))
        .collect()
}

/// The 512-byte plaintext of IEEE 1619 vectors 4 and 10: 00..ff twice.
fn ramp512() -> Vec<u8> {
    (0..512u32).map(|i| i as u8).collect()
}

pub struct XtsVector {
    pub name: &'static str,
    pub key: &'static str,
    pub sector: u64,
    /// `None` means the 00..ff ramp twice.
    pub plaintext: Option<&'static str>,
    pub ciphertext: &'static str,
}

/// IEEE P1619/D16 Annex B (vectors 1, 2, 3, 4 and 10).
pub const XTS_VECTORS: &[XtsVector] = &[
    XtsVector {
        name: "XTS-AES-128 IEEE 1619 vector 1",
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        sector: 0,
        plaintext: Some("0000000000000000000000000000000000000000000000000000000000000000"),
        ciphertext: "917cf69ebd68b2ec9b9fe9a3eadda692cd43d2f59598ed858c02c2652fbf922e",
    },
    XtsVector {
        name: "XTS-AES-128 IEEE 1619 vector 2",
        key: "1111111111111111111111111111111122222222222222222222222222222222",
        sector: 0x33_3333_3333,
        plaintext: Some("4444444444444444444444444444444444444444444444444444444444444444"),
        ciphertext: "c454185e6a16936e39334038acef838bfb186fff7480adc4289382ecd6d394f0",
    },
    XtsVector {
        name: "XTS-AES-128 IEEE 1619 vector 3",
        key: "fffefdfcfbfaf9f8f7f6f5f4f3f2f1f022222222222222222222222222222222",
        sector: 0x33_3333_3333,
        plaintext: Some("4444444444444444444444444444444444444444444444444444444444444444"),
        ciphertext: "af85336b597afc1a900b2eb21ec949d292df4c047e0b21532186a5971a227a89",
    },
    XtsVector {
        name: "XTS-AES-128 IEEE 1619 vector 4 (512-byte sector)",
        key: "2718281828459045235360287471352631415926535897932384626433832795",
        sector: 0,
        plaintext: None,
        ciphertext: "27a7479befa1d476489f308cd4cfa6e2a96e4bbe3208ff25287dd3819616e89c\
c78cf7f5e543445f8333d8fa7f56000005279fa5d8b5e4ad40e736ddb4d35412328063fd2aab53e5ea1e0a9f33\
2500a5df9487d07a5c92cc512c8866c7e860ce93fdf166a24912b422976146ae20ce846bb7dc9ba94a767aaef20\
c0d61ad02655ea92dc4c4e41a8952c651d33174be51a10c421110e6d81588ede82103a252d8a750e8768defffed\
9122810aaeb99f9172af82b604dc4b8e51bcb08235a6f4341332e4ca60482a4ba1a03b3e65008fc5da76b70bf16\
90db4eae29c5f1badd03c5ccf2a55d705ddcd86d449511ceb7ec30bf12b1fa35b913f9f747a8afd1b130e94bff9\
4effd01a91735ca1726acd0b197c4e5b03393697e126826fb6bbde8ecc1e08298516e2c9ed03ff3c1b7860f6de7\
6d4cecd94c8119855ef5297ca67e9f3e7ff72b1e99785ca0a7e7720c5b36dc6d72cac9574c8cbbc2f801e23e56f\
d344b07f22154beba0f08ce8891e643ed995c94d9a69c9f1b5f499027a78572aeebd74d20cc39881c213ee770b1\
010e4bea718846977ae119f7a023ab58cca0ad752afe656bb3c17256a9f6e9bf19fdd5a38fc82bbe872c5539edb\
609ef4f79c203ebb140f2e583cb2ad15b4aa5b655016a8449277dbd477ef2c8d6c017db738b18deb4a427d1923c\
e3ff262735779a418f20a282df920147beabe421ee5319d0568",
    },
    XtsVector {
        name: "XTS-AES-256 IEEE 1619 vector 10 (512-byte sector)",
        key: "27182818284590452353602874713526624977572470936999595749669676273141592653589793238462643383279502884197169399375105820974944592",
        sector: 0xff,
        plaintext: None,
        ciphertext: "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b\
5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd5776926c49a3095eb108fd1098b\
aec70aaa66999a72a82f27d848b21d4a741b0c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf10000208\
87891429ca2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0b5781c34803fa7542\
1c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f93ec05c52e0493ef31a12d3d9260f79a289d6a379bc7\
0c50841473d1a8cc81ec583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a84e18e8\
f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1505eb309326d68378f8374595c849d84f4\
c333ec4423885143cb47bd71c5edae9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90\
c29a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac6e333b93eb4aff0479da9a41\
0e4450e0dd7ae4c6e2910900575da401fc07059f645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed537\
6441a77ed43851ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa773dad38014bd2\
092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151",
    },
];

pub struct CbcVector {
    pub name: &'static str,
    pub key: &'static str,
    pub iv: &'static str,
    pub plaintext: &'static str,
    pub ciphertext: &'static str,
}

const SP800_38A_PLAINTEXT: &str = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";

/// NIST SP 800-38A F.2.1 and F.2.5.
pub const CBC_VECTORS: &[CbcVector] = &[
    CbcVector {
        name: "AES-128-CBC NIST SP 800-38A F.2.1",
        key: "2b7e151628aed2a6abf7158809cf4f3c",
        iv: "000102030405060708090a0b0c0d0e0f",
        plaintext: SP800_38A_PLAINTEXT,
        ciphertext: "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2\
73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7",
    },
    CbcVector {
        name: "AES-256-CBC NIST SP 800-38A F.2.5",
        key: "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
        iv: "000102030405060708090a0b0c0d0e0f",
        plaintext: SP800_38A_PLAINTEXT,
        ciphertext: "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d\
39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b",
    },
];

pub struct AeadVector {
    pub name: &'static str,
    pub cipher: UserCipher,
    pub key: &'static str,
    pub nonce: &'static str,
    pub aad: &'static str,
    pub plaintext: &'static str,
    /// Ciphertext followed by the 16-byte tag.
    pub sealed: &'static str,
}

/// GCM: McGrew & Viega test cases 2, 3 and 14 (the NIST GCM spec's examples);
/// ChaCha20-Poly1305: RFC 8439 section 2.8.2.
pub const AEAD_VECTORS: &[AeadVector] = &[
    AeadVector {
        name: "AES-128-GCM test case 2",
        cipher: UserCipher::AesGcm128,
        key: "00000000000000000000000000000000",
        nonce: "000000000000000000000000",
        aad: "",
        plaintext: "00000000000000000000000000000000",
        sealed: "0388dace60b6a392f328c2b971b2fe78ab6e47d42cec13bdf53a67b21257bddf",
    },
    AeadVector {
        name: "AES-128-GCM test case 3",
        cipher: UserCipher::AesGcm128,
        key: "feffe9928665731c6d6a8f9467308308",
        nonce: "cafebabefacedbaddecaf888",
        aad: "",
        plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
        sealed: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985\
4d5c2af327cd64a62cf35abd2ba6fab4",
    },
    AeadVector {
        name: "AES-256-GCM test case 14",
        cipher: UserCipher::AesGcm256,
        key: "0000000000000000000000000000000000000000000000000000000000000000",
        nonce: "000000000000000000000000",
        aad: "",
        plaintext: "00000000000000000000000000000000",
        sealed: "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919",
    },
    AeadVector {
        name: "ChaCha20-Poly1305 RFC 8439 2.8.2",
        cipher: UserCipher::ChaCha20Poly1305,
        key: "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
        nonce: "070000004041424344454647",
        aad: "50515253c0c1c2c3c4c5c6c7",
        // "Ladies and Gentlemen of the class of '99: If I could offer you only
        // one tip for the future, sunscreen would be it."
        plaintext: "4c616469657320616e642047656e746c656d656e206f662074686520636c6173\
73206f66202739393a204966204920636f756c64206f6666657220796f75206f6e6c79206f6e652074697020\
666f7220746865206675747572652c2073756e73637265656e20776f756c642062652069742e",
        sealed: "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6\
3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee3\
28091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116\
1ae10b594f09e26a7e902ecbd0600691",
    },
];

pub struct Pbkdf2Vector {
    pub name: &'static str,
    pub prf: Prf,
    pub password: &'static [u8],
    pub salt: &'static [u8],
    pub rounds: u32,
    pub key: &'static str,
}

/// RFC 6070 (SHA-1), RFC 7914 section 11 (SHA-256), and the widely published
/// SHA-256/SHA-512 "password"/"salt" values (first 20 bytes, as in RFC 6070).
pub const PBKDF2_VECTORS: &[Pbkdf2Vector] = &[
    Pbkdf2Vector {
        name: "PBKDF2-HMAC-SHA1 RFC 6070 (c=1)",
        prf: Prf::Sha1,
        password: b"password",
        salt: b"salt",
        rounds: 1,
        key: "0c60c80f961f0e71f3a9b524af6012062fe037a6",
    },
    Pbkdf2Vector {
        name: "PBKDF2-HMAC-SHA1 RFC 6070 (c=4096)",
        prf: Prf::Sha1,
        password: b"password",
        salt: b"salt",
        rounds: 4096,
        key: "4b007901b765489abead49d926f721d065a429c1",
    },
    Pbkdf2Vector {
        name: "PBKDF2-HMAC-SHA256 RFC 7914 section 11 (c=1)",
        prf: Prf::Sha256,
        password: b"passwd",
        salt: b"salt",
        rounds: 1,
        key: "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc\
49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783",
    },
    Pbkdf2Vector {
        name: "PBKDF2-HMAC-SHA256 password/salt (c=4096)",
        prf: Prf::Sha256,
        password: b"password",
        salt: b"salt",
        rounds: 4096,
        key: "c5e478d59288c841aa530db6845c4c8d962893a0",
    },
    Pbkdf2Vector {
        name: "PBKDF2-HMAC-SHA512 password/salt (c=1)",
        prf: Prf::Sha512,
        password: b"password",
        salt: b"salt",
        rounds: 1,
        key: "867f70cf1ade02cff3752599a3a53dc4af34c7a6",
    },
];

/// RFC 9106 section 5.3 (Argon2id, version 0x13).
pub const ARGON2ID_RFC9106_TAG: &str =
    "0d640df58d78766c08c037a34a8b53c9d01ef0452d75b65eb52520e96b01e659";

const USER: &str = "user space";
const KERNEL: &str = "kernel (AF_ALG)";

fn outcome(path: &str, vector: &str, verdict: Verdict) -> KatOutcome {
    KatOutcome {
        path: path.to_string(),
        vector: vector.to_string(),
        verdict,
    }
}

fn compare(got: &[u8], want: &[u8], what: &str) -> Verdict {
    if got == want {
        Verdict::Pass
    } else {
        Verdict::Fail {
            detail: format!(
                "{what} mismatch: got {}, want {}",
                to_hex(got),
                to_hex(want)
            ),
        }
    }
}

fn to_hex(b: &[u8]) -> String {
    let s: String = b.iter().take(32).map(|x| format!("{x:02x}")).collect();
    if b.len() > 32 { format!("{s}...") } else { s }
}

/// Encrypts then decrypts through `enc` / `dec` and checks both directions.
fn both_ways(
    plain: &[u8],
    want: &[u8],
    enc: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
    dec: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
) -> Verdict {
    let mut buf = plain.to_vec();
    if let Err(e) = enc(&mut buf) {
        return Verdict::Fail { detail: e };
    }
    let v = compare(&buf, want, "ciphertext");
    if v != Verdict::Pass {
        return v;
    }
    let mut back = want.to_vec();
    if let Err(e) = dec(&mut back) {
        return Verdict::Fail { detail: e };
    }
    compare(&back, plain, "decrypted plaintext")
}

fn xts_plain(v: &XtsVector) -> Vec<u8> {
    v.plaintext.map(hex).unwrap_or_else(ramp512)
}

fn xts_cipher(key_len: usize) -> UserCipher {
    if key_len == 64 {
        UserCipher::AesXts512
    } else {
        UserCipher::AesXts256
    }
}

/// Every vector through the user-space implementations.
pub fn user_space() -> Vec<KatOutcome> {
    let mut out = Vec::new();
    for v in XTS_VECTORS {
        let key = hex(v.key);
        let verdict = match xts_cipher(key.len()).instance(&key) {
            Err(e) => Verdict::Fail {
                detail: e.to_string(),
            },
            Ok(mut c) => {
                let mut d = xts_cipher(key.len()).instance(&key).ok();
                both_ways(
                    &xts_plain(v),
                    &hex(v.ciphertext),
                    |b| c.encrypt(b, v.sector).map_err(|e| e.to_string()),
                    |b| match d.as_mut() {
                        Some(d) => d.decrypt(b, v.sector).map_err(|e| e.to_string()),
                        None => Err("no decryptor".into()),
                    },
                )
            }
        };
        out.push(outcome(USER, v.name, verdict));
    }
    for v in CBC_VECTORS {
        let (key, iv) = (hex(v.key), iv16(v.iv));
        let verdict = both_ways(
            &hex(v.plaintext),
            &hex(v.ciphertext),
            |b| userspace::cbc_with_iv(&key, &iv, b, true).map_err(|e| e.to_string()),
            |b| userspace::cbc_with_iv(&key, &iv, b, false).map_err(|e| e.to_string()),
        );
        out.push(outcome(USER, v.name, verdict));
    }
    for v in AEAD_VECTORS {
        out.push(outcome(USER, v.name, aead_verdict(v)));
    }
    for v in PBKDF2_VECTORS {
        let want = hex(v.key);
        let mut got = vec![0u8; want.len()];
        v.prf.derive(v.password, v.salt, v.rounds, &mut got);
        out.push(outcome(USER, v.name, compare(&got, &want, "derived key")));
    }
    out.push(outcome(
        USER,
        "Argon2id RFC 9106 section 5.3",
        argon2_verdict(),
    ));
    out
}

fn iv16(s: &str) -> [u8; 16] {
    let mut iv = [0u8; 16];
    let b = hex(s);
    let n = b.len().min(16);
    iv[..n].copy_from_slice(&b[..n]);
    iv
}

fn aead_verdict(v: &AeadVector) -> Verdict {
    let key = hex(v.key);
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&hex(v.nonce)[..12]);
    let (aad, plain, want) = (hex(v.aad), hex(v.plaintext), hex(v.sealed));
    let sealed = match userspace::aead_seal(v.cipher, &key, &nonce, &aad, &plain) {
        Ok(s) => s,
        Err(e) => {
            return Verdict::Fail {
                detail: e.to_string(),
            };
        }
    };
    let verdict = compare(&sealed, &want, "ciphertext and tag");
    if verdict != Verdict::Pass {
        return verdict;
    }
    match userspace::aead_open(v.cipher, &key, &nonce, &aad, &want) {
        Ok(p) => {
            let v2 = compare(&p, &plain, "opened plaintext");
            if v2 != Verdict::Pass {
                return v2;
            }
        }
        Err(e) => {
            return Verdict::Fail {
                detail: e.to_string(),
            };
        }
    }
    // A flipped tag bit must be refused.
    let mut bad = want.clone();
    if let Some(last) = bad.last_mut() {
        *last ^= 1;
    }
    match userspace::aead_open(v.cipher, &key, &nonce, &aad, &bad) {
        Err(_) => Verdict::Pass,
        Ok(_) => Verdict::Fail {
            detail: "a forged tag was accepted".into(),
        },
    }
}

fn argon2_verdict() -> Verdict {
    let params = argon2::ParamsBuilder::new()
        .m_cost(32)
        .t_cost(3)
        .p_cost(4)
        .data(match argon2::AssociatedData::new(&[0x04; 12]) {
            Ok(d) => d,
            Err(e) => {
                return Verdict::Fail {
                    detail: e.to_string(),
                };
            }
        })
        .build();
    let result = params.and_then(|p| {
        let ctx = argon2::Argon2::new_with_secret(
            &[0x03; 8],
            argon2::Algorithm::Argon2id,
            argon2::Version::V0x13,
            p,
        )?;
        let mut out = [0u8; 32];
        ctx.hash_password_into(&[0x01; 32], &[0x02; 16], &mut out)?;
        Ok(out)
    });
    match result {
        Ok(out) => compare(&out, &hex(ARGON2ID_RFC9106_TAG), "tag"),
        Err(e) => Verdict::Fail {
            detail: e.to_string(),
        },
    }
}

/// One request through a fresh AF_ALG transform.
fn kernel_crypt(
    alg: &str,
    key: &[u8],
    iv: &[u8],
    dir: Direction,
    data: &mut [u8],
) -> Result<(), String> {
    let tfm = kernel::keyed(alg, key).map_err(|e| e.to_string())?;
    let mut op = tfm.op().map_err(|e| e.to_string())?;
    let input = data.to_vec();
    op.crypt(dir, iv, &input, data).map_err(|e| e.to_string())
}

fn sector_iv(sector: u64, len: usize) -> Vec<u8> {
    let mut iv = vec![0u8; len];
    kernel::plain64_iv(sector, &mut iv);
    iv
}

/// The same vectors through the kernel. Without AF_ALG: one skip entry that
/// says exactly why (the caller decides whether that is a failure).
pub fn kernel() -> Vec<KatOutcome> {
    if let Err(e) = afalg::probe() {
        return vec![outcome(
            KERNEL,
            "all kernel vectors",
            Verdict::Skip {
                reason: e.to_string(),
            },
        )];
    }
    let mut out = Vec::new();
    let run = |alg: &str, key: &[u8], iv: &[u8], plain: &[u8], want: &[u8]| -> Verdict {
        let verdict = both_ways(
            plain,
            want,
            |b| kernel_crypt(alg, key, iv, Direction::Encrypt, b),
            |b| kernel_crypt(alg, key, iv, Direction::Decrypt, b),
        );
        match verdict {
            Verdict::Fail { detail } if detail.contains("ENOENT") => {
                Verdict::Skip { reason: detail }
            }
            v => v,
        }
    };
    for v in XTS_VECTORS {
        let iv = sector_iv(v.sector, 16);
        let verdict = run(
            "xts(aes)",
            &hex(v.key),
            &iv,
            &xts_plain(v),
            &hex(v.ciphertext),
        );
        out.push(outcome(KERNEL, v.name, verdict));
    }
    for v in CBC_VECTORS {
        let verdict = run(
            "cbc(aes)",
            &hex(v.key),
            &iv16(v.iv),
            &hex(v.plaintext),
            &hex(v.ciphertext),
        );
        out.push(outcome(KERNEL, v.name, verdict));
    }
    // ESSIV has no published vectors; the expected value comes from the
    // user-space AES and SHA-256 that the vectors above have just verified:
    // IV = AES-256_{SHA-256(key)}(plain64 sector), then CBC.
    for key_len in [16usize, 32] {
        let name = format!(
            "AES-{}-CBC-ESSIV:SHA256 sector 0x1234 (derived)",
            key_len * 8
        );
        let key: Vec<u8> = (0..key_len as u8)
            .map(|i| i.wrapping_mul(7).wrapping_add(1))
            .collect();
        let plain = ramp512();
        let verdict = essiv_expected(&key, 0x1234, &plain).map_or_else(
            |e| Verdict::Fail { detail: e },
            |want| {
                run(
                    "essiv(cbc(aes),sha256)",
                    &key,
                    &sector_iv(0x1234, 16),
                    &plain,
                    &want,
                )
            },
        );
        out.push(outcome(KERNEL, &name, verdict));
    }
    out.push(outcome(
        KERNEL,
        "Adiantum(XChaCha12,AES) round trip",
        adiantum_round_trip(),
    ));
    out
}

fn essiv_expected(key: &[u8], sector: u64, plain: &[u8]) -> Result<Vec<u8>, String> {
    let salt = ring::digest::digest(&ring::digest::SHA256, key);
    let mut iv = [0u8; 16];
    iv[..8].copy_from_slice(&sector.to_le_bytes());
    userspace::aes256_block(salt.as_ref(), &mut iv).map_err(|e| e.to_string())?;
    let mut buf = plain.to_vec();
    userspace::cbc_with_iv(key, &iv, &mut buf, true).map_err(|e| e.to_string())?;
    Ok(buf)
}

/// No Adiantum implementation in user space to compare with: check that it
/// changes the data and gives it back, and say so in the vector name.
fn adiantum_round_trip() -> Verdict {
    let alg = "adiantum(xchacha12,aes)";
    let key: Vec<u8> = (0..32u8).collect();
    let iv = sector_iv(9, 32);
    let plain = ramp512();
    let mut buf = plain.clone();
    if let Err(e) = kernel_crypt(alg, &key, &iv, Direction::Encrypt, &mut buf) {
        return if e.contains("ENOENT") {
            Verdict::Skip { reason: e }
        } else {
            Verdict::Fail { detail: e }
        };
    }
    if buf == plain {
        return Verdict::Fail {
            detail: "ciphertext equals plaintext".into(),
        };
    }
    if let Err(e) = kernel_crypt(alg, &key, &iv, Direction::Decrypt, &mut buf) {
        return Verdict::Fail { detail: e };
    }
    compare(&buf, &plain, "decrypted plaintext")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_decodes() {
        assert_eq!(hex("00ff 10"), vec![0, 255, 16]);
        assert_eq!(hex("AbC0"), vec![0xab, 0xc0]);
    }

    #[test]
    fn every_user_space_vector_passes() {
        let results = user_space();
        assert_eq!(
            results.len(),
            XTS_VECTORS.len() + CBC_VECTORS.len() + AEAD_VECTORS.len() + PBKDF2_VECTORS.len() + 1
        );
        for r in &results {
            assert_eq!(r.verdict, Verdict::Pass, "{}", r.vector);
        }
    }

    #[test]
    fn a_wrong_answer_is_caught() {
        let v = compare(&[1, 2], &[1, 3], "ciphertext");
        assert!(
            matches!(v, Verdict::Fail { ref detail } if detail.contains("got 0102, want 0103"))
        );
    }

    #[test]
    fn kernel_vectors_run_or_say_exactly_why_not() {
        let results = kernel();
        match afalg::probe() {
            Err(_) => {
                // This machine: kernel without AF_ALG.
                assert_eq!(results.len(), 1);
                match &results[0].verdict {
                    Verdict::Skip { reason } => {
                        assert!(reason.contains("EAFNOSUPPORT"), "{reason}");
                        assert!(
                            reason.contains("CONFIG_CRYPTO_USER_API_SKCIPHER"),
                            "{reason}"
                        );
                    }
                    v => panic!("expected a skip, got {v:?}"),
                }
            }
            Ok(()) => {
                for r in &results {
                    assert!(
                        !matches!(r.verdict, Verdict::Fail { .. }),
                        "{}: {:?}",
                        r.vector,
                        r.verdict
                    );
                }
            }
        }
    }
}
