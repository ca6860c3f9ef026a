//! `#[wasmrace::test]`: exports a plain `fn name() { .. }` as the wasm
//! function `wasmrace_test_name`, which the wasmrace host discovers and runs
//! as a test. Re-exported by the `wasmrace` crate; use it from there.
//!
//! The item is parsed by hand from the token stream (no `syn`/`quote`): the
//! only things to find are the `fn` keyword, the name, the parameter list, an
//! optional return type and the body, and keeping the guest SDK free of
//! dependencies keeps guest builds fast.
//!
//! ```
//! #[wasmrace_macros::test]
//! fn lost_update() {}
//! # fn main() { __wasmrace_test_lost_update(); }
//! ```
//!
//! expands to the function, unchanged, plus
//!
//! ```ignore
//! #[unsafe(export_name = "wasmrace_test_lost_update")]
//! pub extern "C" fn __wasmrace_test_lost_update() { lost_update() }
//! ```
//!
//! Misuse is a compile error pointing at the offending tokens:
//!
//! ```compile_fail
//! #[wasmrace_macros::test]
//! fn takes_args(n: u32) {}
//! # fn main() {}
//! ```
//!
//! ```compile_fail
//! #[wasmrace_macros::test]
//! struct NotAFunction;
//! # fn main() {}
//! ```
//!
//! ```compile_fail
//! #[wasmrace_macros::test]
//! fn returns_something() -> u32 { 1 }
//! # fn main() {}
//! ```
//!
//! ```compile_fail
//! #[wasmrace_macros::test]
//! async fn is_async() {}
//! # fn main() {}
//! ```
//!
//! ```compile_fail
//! #[wasmrace_macros::test]
//! fn is_generic<T>() {}
//! # fn main() {}
//! ```
//!
//! ```compile_fail
//! #[wasmrace_macros::test(arg)]
//! fn has_arguments() {}
//! # fn main() {}
//! ```
#![deny(missing_docs)]

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// Marks `fn name() { .. }` as a wasmrace test. See the crate docs.
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    // The item is always emitted unchanged, even next to an error, so that a
    // mistake in the signature does not cascade into "cannot find function"
    // errors wherever the function is used.
    let mut out = item.clone();
    match expand(attr, item) {
        Ok(wrapper) => out.extend(wrapper),
        Err(e) => out.extend(e.into_compile_error()),
    }
    out
}

/// A compile error at a span.
struct Error {
    span: Span,
    msg: String,
}

impl Error {
    fn new(span: Span, msg: impl Into<String>) -> Error {
        Error {
            span,
            msg: msg.into(),
        }
    }

    /// `::core::compile_error! { "msg" }` with every token at the error's
    /// span, so rustc underlines the offending tokens rather than the
    /// attribute.
    fn into_compile_error(self) -> TokenStream {
        let mut body = TokenTree::Literal(Literal::string(&self.msg));
        body.set_span(self.span);
        let tokens = [
            TokenTree::Punct(Punct::new(':', Spacing::Joint)),
            TokenTree::Punct(Punct::new(':', Spacing::Alone)),
            TokenTree::Ident(Ident::new("core", self.span)),
            TokenTree::Punct(Punct::new(':', Spacing::Joint)),
            TokenTree::Punct(Punct::new(':', Spacing::Alone)),
            TokenTree::Ident(Ident::new("compile_error", self.span)),
            TokenTree::Punct(Punct::new('!', Spacing::Alone)),
            TokenTree::Group(Group::new(Delimiter::Brace, body.into())),
        ];
        tokens
            .into_iter()
            .map(|mut t| {
                t.set_span(self.span);
                t
            })
            .collect()
    }
}

const USAGE: &str = "`#[wasmrace::test]` applies to `fn name() { .. }`";

/// Checks the item is a test function and builds its export wrapper.
fn expand(attr: TokenStream, item: TokenStream) -> Result<TokenStream, Error> {
    if let Some(t) = attr.into_iter().next() {
        return Err(Error::new(
            t.span(),
            "`#[wasmrace::test]` takes no arguments",
        ));
    }
    let tokens: Vec<TokenTree> = item.into_iter().collect();
    let mut rest = tokens.as_slice();

    // Outer attributes (`#[..]`, doc comments arrive in this form too).
    while let [TokenTree::Punct(p), TokenTree::Group(g), tail @ ..] = rest {
        if p.as_char() != '#' || g.delimiter() != Delimiter::Bracket {
            break;
        }
        rest = tail;
    }
    // Visibility: `pub`, `pub(crate)`, `pub(in path)`.
    if let [TokenTree::Ident(id), tail @ ..] = rest {
        if id.to_string() == "pub" {
            rest = tail;
            if let [TokenTree::Group(g), tail @ ..] = rest {
                if g.delimiter() == Delimiter::Parenthesis {
                    rest = tail;
                }
            }
        }
    }
    // Qualifiers up to `fn`.
    loop {
        let Some(first) = rest.first() else {
            return Err(Error::new(Span::call_site(), USAGE));
        };
        let TokenTree::Ident(id) = first else {
            return Err(Error::new(first.span(), USAGE));
        };
        match id.to_string().as_str() {
            "fn" => {
                rest = &rest[1..];
                break;
            }
            "const" => rest = &rest[1..],
            "extern" => {
                rest = &rest[1..];
                if let [TokenTree::Literal(_), tail @ ..] = rest {
                    rest = tail; // the ABI string
                }
            }
            "async" => {
                return Err(Error::new(
                    id.span(),
                    "a `#[wasmrace::test]` function cannot be `async`: the host calls it \
                     directly and there is no executor; use `wasmrace::thread` for concurrency",
                ))
            }
            "unsafe" => {
                return Err(Error::new(
                    id.span(),
                    "a `#[wasmrace::test]` function cannot be `unsafe`: the host calls it \
                     without any precondition",
                ))
            }
            _ => return Err(Error::new(id.span(), format!("{USAGE}, not to this item"))),
        }
    }

    let [TokenTree::Ident(name), rest @ ..] = rest else {
        let span = rest.first().map_or(Span::call_site(), TokenTree::span);
        return Err(Error::new(span, "expected the function's name"));
    };
    let mut rest = rest;

    if let [TokenTree::Punct(p), ..] = rest {
        if p.as_char() == '<' {
            return Err(Error::new(
                p.span(),
                "a `#[wasmrace::test]` function cannot be generic: the host calls one \
                 concrete `fn()`",
            ));
        }
    }

    let [TokenTree::Group(params), tail @ ..] = rest else {
        let span = rest.first().map_or(name.span(), TokenTree::span);
        return Err(Error::new(span, "expected the parameter list `()`"));
    };
    if params.delimiter() != Delimiter::Parenthesis {
        return Err(Error::new(
            params.span(),
            "expected the parameter list `()`",
        ));
    }
    if !params.stream().is_empty() {
        return Err(Error::new(
            params.span(),
            format!(
                "a `#[wasmrace::test]` function takes no parameters: the host calls `{name}()`; \
                 use `wasmrace::choose` for nondeterministic inputs"
            ),
        ));
    }
    rest = tail;

    // An explicit `-> ()` is fine; any other return type is not, since the
    // exported function returns nothing and a test fails only by panicking.
    if let [TokenTree::Punct(dash), TokenTree::Punct(gt), tail @ ..] = rest {
        if dash.as_char() == '-' && gt.as_char() == '>' {
            match tail {
                [TokenTree::Group(unit), tail @ ..]
                    if unit.delimiter() == Delimiter::Parenthesis && unit.stream().is_empty() =>
                {
                    rest = tail;
                }
                _ => {
                    let span = tail.first().map_or(gt.span(), TokenTree::span);
                    return Err(Error::new(
                        span,
                        "a `#[wasmrace::test]` function returns `()`: report failures by \
                         panicking (`assert!`, `unwrap`)",
                    ));
                }
            }
        }
    }

    match rest {
        [TokenTree::Group(body)] if body.delimiter() == Delimiter::Brace => {}
        [TokenTree::Ident(w), ..] if w.to_string() == "where" => {
            return Err(Error::new(
                w.span(),
                "a `#[wasmrace::test]` function cannot have a `where` clause",
            ))
        }
        [first, ..] => return Err(Error::new(first.span(), "expected the function body")),
        [] => return Err(Error::new(name.span(), "expected the function body")),
    }

    Ok(wrapper(name))
}

/// `#[unsafe(export_name = "wasmrace_test_NAME")] pub extern "C" fn
/// __wasmrace_test_NAME() { NAME() }`. The `unsafe(..)` attribute form is
/// required by edition 2024 and accepted by 2021, so the expansion works in
/// either kind of user crate.
fn wrapper(name: &Ident) -> TokenStream {
    let full = name.to_string();
    // A raw identifier (`r#match`) exports under its plain name.
    let plain = full.strip_prefix("r#").unwrap_or(&full);
    let header = format!(
        "#[unsafe(export_name = \"wasmrace_test_{plain}\")] \
         #[doc(hidden)] \
         #[allow(missing_docs, non_snake_case)] \
         pub extern \"C\" fn __wasmrace_test_{plain}()"
    );
    let mut out: TokenStream = header.parse().expect("the wrapper header is valid Rust");
    // The call keeps the user's identifier (and its span), so it resolves to
    // the annotated function wherever the item is.
    let call: TokenStream = [
        TokenTree::Ident(name.clone()),
        TokenTree::Group(Group::new(Delimiter::Parenthesis, TokenStream::new())),
    ]
    .into_iter()
    .collect();
    out.extend([TokenTree::Group(Group::new(Delimiter::Brace, call))]);
    out
}
