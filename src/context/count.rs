//! Counting tokens without a tokenizer: a request's size is its JSON bytes times a rate. The
//! rate starts conservative (3 bytes a token, more tokens than most text has) and is then
//! learned from what the server reports: the last reply's `usage.prompt_tokens` over the bytes
//! that request sent. So the count is exact for what the server has seen and an estimate only
//! for what was added since. It never assumes more than 4 bytes a token, nor less than one.
//!
//! Pure: numbers in, numbers out.

/// Tokens per byte before the server has said anything: 3 bytes a token.
const FIRST: f64 = 1.0 / 3.0;
/// The fewest tokens per byte ever assumed: 4 bytes a token.
const LEAST: f64 = 0.25;
/// The most: a token per byte.
const MOST: f64 = 1.0;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    tokens_per_byte: f64,
}

impl Default for Rate {
    fn default() -> Rate {
        Rate {
            tokens_per_byte: FIRST,
        }
    }
}

impl Rate {
    /// The tokens `bytes` of JSON are counted as (rounded up).
    pub fn tokens(&self, bytes: usize) -> u64 {
        (bytes as f64 * self.tokens_per_byte).ceil() as u64
    }

    /// The bytes that make about `tokens` tokens (rounded down).
    pub fn bytes(&self, tokens: u64) -> usize {
        (tokens as f64 / self.tokens_per_byte) as usize
    }

    /// Learns from a reply: the server counted `tokens` for a request of `bytes`.
    pub fn learn(&mut self, tokens: u64, bytes: usize) {
        if tokens > 0 && bytes > 0 {
            self.tokens_per_byte = (tokens as f64 / bytes as f64).clamp(LEAST, MOST);
        }
    }

    /// Counts more tokens per byte from now on, by `factor`: the server refused a request
    /// this rate said would fit.
    pub fn raise(&mut self, factor: f64) {
        self.tokens_per_byte = (self.tokens_per_byte * factor).clamp(LEAST, MOST);
    }

    /// Bytes per token, for people.
    pub fn bytes_per_token(&self) -> f64 {
        1.0 / self.tokens_per_byte
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_three_bytes_a_token_and_learns_within_bounds() {
        let mut rate = Rate::default();
        assert_eq!(rate.tokens(300), 100);
        assert_eq!(rate.tokens(1), 1, "rounds up");
        rate.learn(250, 1000);
        assert_eq!(rate.tokens(1000), 250);
        assert_eq!(rate.bytes(250), 1000);
        rate.learn(100, 1000); // 10 bytes a token: not believed
        assert_eq!(rate.tokens(1000), 250, "never more than 4 bytes a token");
        rate.learn(5000, 1000);
        assert_eq!(rate.tokens(1000), 1000, "never less than a byte a token");
        rate.learn(0, 1000);
        assert_eq!(rate.tokens(1000), 1000, "a zero count teaches nothing");
        let mut rate = Rate::default();
        rate.raise(1.5);
        assert_eq!(rate.tokens(1000), 500);
    }
}
