//! Erlang-style message passing: every thread has one mailbox, senders
//! never block, receivers block while no (matching) message is there.
//! Messages from one sender to one receiver arrive in the order sent; the
//! host explores how messages from different senders interleave.

use crate::{sys, ThreadId};

/// A received message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Message {
    /// The thread that sent it.
    pub from: ThreadId,
    /// The bytes as sent.
    pub data: Vec<u8>,
}

/// Appends `data` to `to`'s mailbox. Never blocks; a message to a thread
/// that has exited is dropped. A scheduling point.
#[track_caller]
pub fn send(to: ThreadId, data: &[u8]) {
    // SAFETY: the host copies `data.len()` bytes at `data` when the send runs,
    // which is before this call returns.
    unsafe {
        sys::send(
            to.raw(),
            sys::addr(data.as_ptr()),
            data.len() as i32,
            sys::site(),
        )
    }
}

/// Takes the oldest message, blocking while the mailbox is empty. A
/// scheduling point.
#[track_caller]
pub fn recv() -> Message {
    // SAFETY: plain value hook; the message is fetched by `take`.
    let len = unsafe { sys::recv(sys::site()) };
    take(len)
}

/// Takes the oldest message sent by `from`, blocking until there is one
/// (Erlang's selective receive). Other messages stay queued in order. A
/// scheduling point.
#[track_caller]
pub fn recv_from(from: ThreadId) -> Message {
    // SAFETY: plain value hook; the message is fetched by `take`.
    let len = unsafe { sys::recv_from(from.raw(), sys::site()) };
    take(len)
}

/// Copies the message the last receive took out of the host. The receive hook
/// only returns the length, so the buffer can be allocated here, by the
/// guest's own allocator, before the host writes into it.
fn take(len: i32) -> Message {
    let len = usize::try_from(len).expect("wasmrace host returned a negative message length");
    let mut data = Vec::<u8>::with_capacity(len);
    let mut from = 0u64;
    // SAFETY: `data` has room for `len` bytes, which the host writes in full
    // (the length it returned), and `from` is a valid `u64` out location.
    unsafe {
        sys::recv_take(sys::addr_mut(data.as_mut_ptr()), sys::addr_mut(&mut from));
        data.set_len(len);
    }
    Message {
        from: ThreadId::from_raw(from as i64),
        data,
    }
}
