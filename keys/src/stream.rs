//! Sealed streams: long data (snapshots, later backups) as a sequence of independently sealed
//! frames, so it can be produced and checked in bounded pieces. Each frame's associated data
//! binds the stream's context, the frame's position and whether it is the last one, so frames
//! cannot be reordered, dropped, spliced from another stream or cut off at the end unnoticed.
//!
//! Format: `MAGIC`, then per frame `u32 BE length || nonce || ciphertext+tag`; the last frame
//! (possibly empty) carries the "last" flag. [`SealWriter`] and [`OpenReader`] produce and
//! read the same format one frame at a time, so a stream of any size needs one frame of memory.

use std::io::{self, Read, Write};

use zeroize::Zeroizing;

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

/// Seals what is written to it as a framed stream into `out`, one frame at a time.
/// [`SealWriter::finish`] writes the last frame; a stream dropped without it does not open.
pub struct SealWriter<W: Write> {
    out: W,
    key: Zeroizing<[u8; KEY_LEN]>,
    context: Vec<u8>,
    buf: Vec<u8>,
    index: u64,
}

impl<W: Write> SealWriter<W> {
    pub fn new(key: &[u8; KEY_LEN], context: &[u8], mut out: W) -> io::Result<Self> {
        out.write_all(MAGIC)?;
        let buf = Vec::with_capacity(FRAME_LEN);
        Ok(SealWriter { out, key: Zeroizing::new(*key), context: context.to_vec(), buf, index: 0 })
    }

    fn emit(&mut self, last: bool) -> io::Result<()> {
        let sealed = aead::seal(&self.key, &frame_ad(&self.context, self.index, last), &self.buf);
        self.out.write_all(&(sealed.len() as u32).to_be_bytes())?;
        self.out.write_all(&sealed)?;
        self.buf.clear();
        self.index += 1;
        Ok(())
    }

    /// Seals the rest as the last frame and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.emit(true)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Write for SealWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // A full frame is sealed only when more data follows, so the last frame is never
        // sealed without its flag (the format allows an empty last frame).
        if self.buf.len() == FRAME_LEN && !data.is_empty() {
            self.emit(false)?;
        }
        let n = data.len().min(FRAME_LEN - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Opens a framed stream from `input` one frame at a time. A frame that opens with the "last"
/// flag ends the stream; reading stops there (whatever follows is the caller's: a trailer).
/// Any failure (wrong key or context, reordering, truncation, tampering) is an
/// `InvalidData` error, and no byte of a frame is returned before the frame is verified.
pub struct OpenReader<R: Read> {
    input: R,
    key: Zeroizing<[u8; KEY_LEN]>,
    context: Vec<u8>,
    frame: Vec<u8>,
    pos: usize,
    index: u64,
    done: bool,
    started: bool,
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

impl<R: Read> OpenReader<R> {
    pub fn new(key: &[u8; KEY_LEN], context: &[u8], input: R) -> Self {
        OpenReader {
            input,
            key: Zeroizing::new(*key),
            context: context.to_vec(),
            frame: Vec::new(),
            pos: 0,
            index: 0,
            done: false,
            started: false,
        }
    }

    /// The inner reader, positioned after the last frame once the stream was read to its end.
    pub fn into_inner(self) -> R {
        self.input
    }

    /// True once the last frame was read and verified.
    pub fn finished(&self) -> bool {
        self.done && self.pos == self.frame.len()
    }

    fn next_frame(&mut self) -> io::Result<()> {
        if !self.started {
            let mut magic = [0u8; 8];
            self.input.read_exact(&mut magic).map_err(|_| invalid("not a sealed stream"))?;
            if &magic != MAGIC {
                return Err(invalid("not a sealed stream"));
            }
            self.started = true;
        }
        let mut len = [0u8; 4];
        self.input.read_exact(&mut len).map_err(|_| invalid("sealed stream cut off"))?;
        let len = u32::from_be_bytes(len) as usize;
        if len > FRAME_LEN + OVERHEAD {
            return Err(invalid("sealed frame too large"));
        }
        let mut sealed = vec![0u8; len];
        self.input.read_exact(&mut sealed).map_err(|_| invalid("sealed stream cut off"))?;
        // The "last" flag is authenticated: a frame opens under exactly one of the two.
        let (plain, last) = match aead::open(&self.key, &frame_ad(&self.context, self.index, false), &sealed) {
            Ok(p) => (p, false),
            Err(_) => match aead::open(&self.key, &frame_ad(&self.context, self.index, true), &sealed) {
                Ok(p) => (p, true),
                Err(_) => return Err(invalid("sealed stream does not open (wrong key, or damaged)")),
            },
        };
        self.frame = plain;
        self.pos = 0;
        self.index += 1;
        self.done = last;
        Ok(())
    }
}

impl<R: Read> Read for OpenReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.frame.len() {
            if self.done || out.is_empty() {
                return Ok(0);
            }
            self.next_frame()?;
        }
        let n = out.len().min(self.frame.len() - self.pos);
        out[..n].copy_from_slice(&self.frame[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

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

    #[test]
    fn streaming_writer_and_reader_match_the_one_shot_format() {
        let key = [5u8; KEY_LEN];
        for n in sizes() {
            let data: Vec<u8> = (0..n).map(|i| (i % 253) as u8).collect();
            let mut w = SealWriter::new(&key, b"ctx", Vec::new()).unwrap();
            for piece in data.chunks(7919) {
                w.write_all(piece).unwrap();
            }
            let sealed = w.finish().unwrap();
            assert_eq!(open_stream(&key, b"ctx", &sealed).unwrap(), data, "one-shot opens streamed, size {n}");
            let mut trailer = seal_stream(&key, b"ctx", &data);
            trailer.extend_from_slice(b"TRAILER");
            let mut r = OpenReader::new(&key, b"ctx", io::Cursor::new(trailer));
            let mut back = Vec::new();
            r.read_to_end(&mut back).unwrap();
            assert!(r.finished());
            assert_eq!(back, data, "streamed opens one-shot, size {n}");
            let mut rest = Vec::new();
            r.into_inner().read_to_end(&mut rest).unwrap();
            assert_eq!(rest, b"TRAILER", "the reader stops at the last frame");
        }
    }

    #[test]
    fn streaming_reader_refuses_what_the_one_shot_refuses() {
        let key = [5u8; KEY_LEN];
        let sealed = seal_stream(&key, b"ctx", &vec![1u8; 2 * FRAME_LEN + 3]);
        let read_all = |key: &[u8; KEY_LEN], ctx: &[u8], bytes: &[u8]| {
            let mut out = Vec::new();
            OpenReader::new(key, ctx, bytes).read_to_end(&mut out).map(|_| out)
        };
        assert!(read_all(&key, b"ctx", &sealed).is_ok());
        assert!(read_all(&[6u8; KEY_LEN], b"ctx", &sealed).is_err());
        assert!(read_all(&key, b"other", &sealed).is_err());
        let frame = 4 + FRAME_LEN + OVERHEAD;
        assert!(read_all(&key, b"ctx", &sealed[..MAGIC.len() + 2 * frame]).is_err(), "cut after a full frame");
        assert!(read_all(&key, b"ctx", &sealed[..sealed.len() - 1]).is_err(), "cut inside the last frame");
        let mut flipped = sealed.clone();
        flipped[MAGIC.len() + 40] ^= 1;
        assert!(read_all(&key, b"ctx", &flipped).is_err());
    }
}
