//! Sealed streams: long data (snapshots, later backups) as a sequence of independently sealed
//! frames, so it can be produced and checked in bounded pieces. Each frame's associated data
//! binds the stream's context, the frame's position and whether it is the last one, so frames
//! cannot be reordered, dropped, spliced from another stream or cut off at the end unnoticed.
//!
//! Format: `MAGIC`, then per frame `u32 BE length || nonce || ciphertext+tag`; the last frame
//! (possibly empty) carries the "last" flag.

use crate::{aead, KeyError, KEY_LEN};

const MAGIC: &[u8; 8] = b"IDNSEAL1";
/// Plaintext bytes per frame.
pub const FRAME_LEN: usize = 1 << 20;
const OVERHEAD: usize = aead::NONCE_LEN + 16;

fn frame_ad(context: &[u8], index: u64, last: bool) -> Vec<u8> {
    let mut ad = Vec::with_capacity(context.len() + 9);
    ad.extend_from_slice(context);
    ad.extend_from_slice(&index.to_be_bytes());
    ad.push(u8::from(last));
    ad
}

/// Seals `plaintext` as a framed stream bound to `context`.
pub fn seal_stream(key: &[u8; KEY_LEN], context: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let frames = plaintext.len() / FRAME_LEN + 1;
    let mut out = Vec::with_capacity(MAGIC.len() + plaintext.len() + frames * (4 + OVERHEAD));
    out.extend_from_slice(MAGIC);
    let mut chunks: Vec<&[u8]> = plaintext.chunks(FRAME_LEN).collect();
    if chunks.last().is_none_or(|c| c.len() == FRAME_LEN) {
        chunks.push(&[]);
    }
    let n = chunks.len();
    for (i, chunk) in chunks.into_iter().enumerate() {
        let sealed = aead::seal(key, &frame_ad(context, i as u64, i + 1 == n), chunk);
        out.extend_from_slice(&(sealed.len() as u32).to_be_bytes());
        out.extend_from_slice(&sealed);
    }
    out
}

/// Opens what [`seal_stream`] produced under the same key and context.
pub fn open_stream(key: &[u8; KEY_LEN], context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
    let rest = sealed.strip_prefix(MAGIC.as_slice()).ok_or(KeyError::Malformed)?;
    let mut out = Vec::with_capacity(rest.len());
    let mut pos = 0usize;
    let mut index = 0u64;
    loop {
        let len_bytes: [u8; 4] = rest.get(pos..pos + 4).and_then(|b| b.try_into().ok()).ok_or(KeyError::Malformed)?;
        let len = u32::from_be_bytes(len_bytes) as usize;
        pos += 4;
        if len > FRAME_LEN + OVERHEAD {
            return Err(KeyError::Malformed);
        }
        let frame = rest.get(pos..pos + len).ok_or(KeyError::Malformed)?;
        pos += len;
        let last = pos == rest.len();
        out.extend_from_slice(&aead::open(key, &frame_ad(context, index, last), frame)?);
        if last {
            return Ok(out);
        }
        index += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> [usize; 6] {
        [0, 1, FRAME_LEN - 1, FRAME_LEN, FRAME_LEN + 1, 3 * FRAME_LEN + 17]
    }

    #[test]
    fn round_trips_at_frame_boundaries() {
        let key = [3u8; KEY_LEN];
        for n in sizes() {
            let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let sealed = seal_stream(&key, b"ctx", &data);
            assert_eq!(open_stream(&key, b"ctx", &sealed).unwrap(), data, "size {n}");
        }
    }

    #[test]
    fn refuses_wrong_key_context_truncation_and_reordering() {
        let key = [3u8; KEY_LEN];
        let data = vec![9u8; 2 * FRAME_LEN + 5];
        let sealed = seal_stream(&key, b"ctx", &data);
        assert!(open_stream(&[4u8; KEY_LEN], b"ctx", &sealed).is_err(), "key is bound");
        assert!(open_stream(&key, b"other", &sealed).is_err(), "context is bound");
        let frame = 4 + FRAME_LEN + OVERHEAD;
        let cut = &sealed[..MAGIC.len() + 2 * frame];
        assert!(open_stream(&key, b"ctx", cut).is_err(), "dropping the last frame is detected");
        let mut swapped = sealed[..MAGIC.len()].to_vec();
        swapped.extend_from_slice(&sealed[MAGIC.len() + frame..MAGIC.len() + 2 * frame]);
        swapped.extend_from_slice(&sealed[MAGIC.len()..MAGIC.len() + frame]);
        swapped.extend_from_slice(&sealed[MAGIC.len() + 2 * frame..]);
        assert!(open_stream(&key, b"ctx", &swapped).is_err(), "reordering is detected");
        let mut flipped = sealed.clone();
        let at = flipped.len() - 1;
        flipped[at] ^= 1;
        assert!(open_stream(&key, b"ctx", &flipped).is_err(), "tampering is detected");
        assert!(open_stream(&key, b"ctx", b"garbage").is_err());
    }
}
