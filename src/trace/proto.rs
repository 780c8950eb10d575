//! A minimal protobuf encoder (the wire format of
//! protobuf.dev/programming-guides/encoding): varints, fixed64 and
//! length-delimited fields, appended to a byte buffer. Nested messages are
//! written in place: `begin` leaves four bytes for the length and `end`
//! fills them with a padded varint, as Perfetto's protozero does, so no
//! message is built twice.

/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

/// Bytes reserved for a nested message's length: a padded varint of up
/// to 2^28 − 1.
const LEN_BYTES: usize = 4;

/// The largest nested message `end` can close.
const MAX_NESTED: usize = (1 << 28) - 1;

fn varint(b: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        b.push(v as u8 | 0x80);
        v >>= 7;
    }
    b.push(v as u8);
}

fn tag(b: &mut Vec<u8>, field: u32, wire: u64) {
    varint(b, (field as u64) << 3 | wire);
}

/// A varint field (uint32/64, bool, enum; int32/int64 as their two's
/// complement, ten bytes when negative, as protobuf wants).
pub fn uint(b: &mut Vec<u8>, field: u32, v: u64) {
    tag(b, field, VARINT);
    varint(b, v);
}

/// An int32 or int64 field.
pub fn int(b: &mut Vec<u8>, field: u32, v: i64) {
    uint(b, field, v as u64);
}

pub fn fixed64(b: &mut Vec<u8>, field: u32, v: u64) {
    tag(b, field, FIXED64);
    b.extend_from_slice(&v.to_le_bytes());
}

/// A string or bytes field.
pub fn bytes(b: &mut Vec<u8>, field: u32, v: &[u8]) {
    tag(b, field, LEN);
    varint(b, v.len() as u64);
    b.extend_from_slice(v);
}

/// Open a nested message in `field`: its fields follow; `end` closes it
/// with the offset returned here.
pub fn begin(b: &mut Vec<u8>, field: u32) -> usize {
    tag(b, field, LEN);
    b.extend_from_slice(&[0; LEN_BYTES]);
    b.len()
}

/// Close the nested message opened at `start`.
pub fn end(b: &mut [u8], start: usize) {
    let len = b.len() - start;
    assert!(len <= MAX_NESTED, "a nested protobuf message over 256 MiB");
    for (i, byte) in b[start - LEN_BYTES..start].iter_mut().enumerate() {
        let more = if i < LEN_BYTES - 1 { 0x80 } else { 0 };
        *byte = (len >> (7 * i)) as u8 & 0x7f | more;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_encode_as_the_protobuf_guide_shows() {
        // The guide's examples: field 1 = 150 is 08 96 01; field 2 =
        // "testing" is 12 07 74 65 73 74 69 6e 67.
        let mut b = Vec::new();
        uint(&mut b, 1, 150);
        bytes(&mut b, 2, b"testing");
        assert_eq!(
            b,
            [0x08, 0x96, 0x01, 0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']
        );
        let mut n = Vec::new();
        int(&mut n, 1, -2);
        assert_eq!(n.len(), 11, "a negative int is ten varint bytes");
        assert_eq!(n[10], 0x01);
    }

    #[test]
    fn nested_lengths_are_padded_varints() {
        let mut b = Vec::new();
        let s = begin(&mut b, 3);
        b.extend_from_slice(&[7; 300]);
        end(&mut b, s);
        // 300 = 0b10_0101100: 0xac 0x02, padded to four bytes.
        assert_eq!(&b[..5], &[0x1a, 0xac, 0x82, 0x80, 0x00]);
        assert_eq!(b.len(), 5 + 300);
    }
}
