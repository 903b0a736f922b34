//! Secrets: random tokens straight from the kernel (getrandom(2)), compared in time that does not depend on
//! where two values differ (`subtle`), so a wrong guess takes as long as a right one.
use subtle::ConstantTimeEq;

/// `N` random bytes from getrandom(2), hex-encoded (`2 * N` characters).
pub fn random_hex<const N: usize>() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

/// Whether `a == b`, in time that depends only on their lengths (which are public: every token of a kind has
/// the same length).
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_hex_of_the_asked_length_and_differ() {
        let a = super::random_hex::<32>().unwrap();
        let b = super::random_hex::<32>().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(super::random_hex::<16>().unwrap().len(), 32);
    }

    #[test]
    fn same_compares_whole_values() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"ab"));
        assert!(!super::same(b"", b"a"));
        assert!(super::same(b"", b""));
    }
}
