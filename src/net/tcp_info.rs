//! TCP_INFO via getsockopt: what the kernel knows about one connection. The
//! values are the local side's view (sender-side for cwnd and retransmits).

use std::os::fd::AsRawFd;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfo {
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_cwnd_bytes: u64,
    pub total_retransmits: u32,
    pub pmtu_bytes: u32,
}

/// `None` when the socket is gone or the kernel refuses (the caller reports no data).
pub fn read<S: AsRawFd>(sock: &S) -> Option<TcpInfo> {
    // SAFETY: tcp_info is plain data; zero is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: pointer and length describe `info`, which outlives the call.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    Some(TcpInfo {
        rtt_us: info.tcpi_rtt,
        rttvar_us: info.tcpi_rttvar,
        snd_cwnd_bytes: u64::from(info.tcpi_snd_cwnd) * u64::from(info.tcpi_snd_mss),
        total_retransmits: info.tcpi_total_retrans,
        pmtu_bytes: info.tcpi_pmtu,
    })
}
