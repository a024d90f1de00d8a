//! A little RESP2 for the test proxy, which must know where each request
//! and reply ends to swallow or hold back one of them: the wire as it is,
//! not a client (the SDK uses the redis crate).

#![allow(dead_code)]
use std::fmt;

/// A reply of the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A simple string (`+OK`).
    Simple(String),
    /// An error reply (`-ERR …`), without the leading `-`.
    Error(String),
    /// An integer (`:1`).
    Int(i64),
    /// A bulk string (`$3\r\nabc`).
    Bulk(Vec<u8>),
    /// An array (`*2 …`).
    Array(Vec<Value>),
    /// The null bulk string (`$-1`) or null array (`*-1`).
    Nil,
}

impl Value {
    /// The value as text, for a simple or bulk string that is valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Simple(s) => Some(s),
            Value::Bulk(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The value as an integer, for an integer reply.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// Whether the value is a null.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }
}

/// Why a reply could not be parsed. The connection it came from cannot be
/// trusted after one: the SDK closes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "protocol error: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

/// Limits on what a reply may claim, so that a broken or hostile peer cannot
/// make the client allocate without bound: the store's own bulk limit
/// (512 MB), its element cap, and a line and nesting depth no reply of
/// tenure comes near.
const MAX_BULK: usize = 512 << 20;
const MAX_ELEMENTS: usize = 1 << 20;
const MAX_LINE: usize = 64 << 10;
const MAX_DEPTH: usize = 32;

/// Encodes a command as an array of bulk strings.
pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(16 + args.iter().map(|a| a.as_ref().len() + 16).sum::<usize>());
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Parses one reply from the front of buf. Returns the reply and how many
/// bytes it took, `Ok(None)` if buf holds only part of a reply (read more
/// and call again with the bytes appended), or an error if buf cannot be the
/// start of a reply.
pub fn parse(buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
    let mut pos = 0;
    match value(buf, &mut pos, 0)? {
        Some(v) => Ok(Some((v, pos))),
        None => Ok(None),
    }
}

fn value(buf: &[u8], pos: &mut usize, depth: usize) -> Result<Option<Value>, ProtocolError> {
    if depth > MAX_DEPTH {
        return Err(ProtocolError(format!(
            "arrays nested deeper than {MAX_DEPTH}"
        )));
    }
    let Some(line) = line(buf, pos)? else {
        return Ok(None);
    };
    let (kind, body) = (line[0], &line[1..]);
    let text = || {
        std::str::from_utf8(body)
            .map_err(|_| ProtocolError(format!("reply line is not UTF-8: {body:?}")))
    };
    match kind {
        b'+' => Ok(Some(Value::Simple(text()?.to_owned()))),
        b'-' => Ok(Some(Value::Error(text()?.to_owned()))),
        b':' => Ok(Some(Value::Int(integer(body)?))),
        b'$' => {
            let n = integer(body)?;
            if n == -1 {
                return Ok(Some(Value::Nil));
            }
            let n = length(n, MAX_BULK, "bulk string")?;
            if buf.len() < *pos + n + 2 {
                return Ok(None);
            }
            if &buf[*pos + n..*pos + n + 2] != b"\r\n" {
                return Err(ProtocolError(format!(
                    "bulk string of {n} bytes not followed by CRLF"
                )));
            }
            let b = buf[*pos..*pos + n].to_vec();
            *pos += n + 2;
            Ok(Some(Value::Bulk(b)))
        }
        b'*' => {
            let n = integer(body)?;
            if n == -1 {
                return Ok(Some(Value::Nil));
            }
            let n = length(n, MAX_ELEMENTS, "array")?;
            // Each element takes at least 3 bytes (":0\r\n" is 4, "+\r\n" 3):
            // reserve no more than the buffer could hold.
            let mut items = Vec::with_capacity(n.min((buf.len() - *pos) / 3));
            for _ in 0..n {
                match value(buf, pos, depth + 1)? {
                    Some(v) => items.push(v),
                    None => return Ok(None),
                }
            }
            Ok(Some(Value::Array(items)))
        }
        other => Err(ProtocolError(format!(
            "unknown reply type {:?}",
            other as char
        ))),
    }
}

/// The next CRLF-terminated line from pos, without its CRLF; pos moves past it.
fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, ProtocolError> {
    let rest = &buf[*pos..];
    let Some(lf) = rest.iter().take(MAX_LINE + 2).position(|&b| b == b'\n') else {
        if rest.len() > MAX_LINE + 1 {
            return Err(ProtocolError(format!(
                "reply line longer than {MAX_LINE} bytes"
            )));
        }
        return Ok(None);
    };
    if lf == 0 || rest[lf - 1] != b'\r' {
        return Err(ProtocolError("reply line not ended by CRLF".into()));
    }
    if lf == 1 {
        return Err(ProtocolError("empty reply line".into()));
    }
    *pos += lf + 1;
    Ok(Some(&rest[..lf - 1]))
}

fn integer(body: &[u8]) -> Result<i64, ProtocolError> {
    std::str::from_utf8(body)
        .ok()
        .filter(|s| !s.starts_with('+'))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            ProtocolError(format!(
                "not an integer: {:?}",
                String::from_utf8_lossy(body)
            ))
        })
}

fn length(n: i64, max: usize, what: &str) -> Result<usize, ProtocolError> {
    match usize::try_from(n) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(ProtocolError(format!(
            "{what} length {n} out of range (0 to {max})"
        ))),
    }
}
