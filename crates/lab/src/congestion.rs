//! TCP congestion control in network namespaces (`delay-router --tcp-congestion`, `bench wan
//! --tcp-congestion`).
//!
//! Outside the host's own namespace Linux sets only the algorithms listed in
//! `net.ipv4.tcp_allowed_congestion_control` (any other is refused with EPERM), and a new
//! namespace starts with the host's default. Some kernels of this kind allow only `reno bbr`, so
//! the default, [`AUTO`], asks for cubic (Linux's default, docs/wan.md "Congestion control")
//! only where a namespace may use it, and otherwise keeps the one the namespace started with.

/// The algorithms this kernel has loaded.
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
/// The algorithms a namespace other than the host's may set.
const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
/// The host's default algorithm, which a new namespace inherits.
const HOST_DEFAULT: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

/// The default: cubic where a namespace may set it, else the namespace's own (the host's).
pub const AUTO: &str = "auto";
/// Leave every namespace with the algorithm it starts with (the host's).
pub const INHERIT: &str = "inherit";
/// What [`AUTO`] asks for where it can.
const PREFERRED: &str = "cubic";

/// The whitespace-separated list in `path` (empty when it cannot be read).
fn list(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The algorithms this kernel has loaded.
pub fn available() -> Vec<String> {
    list(AVAILABLE)
}

/// The algorithms a network namespace may set.
pub fn allowed() -> Vec<String> {
    list(ALLOWED)
}

/// The host's default algorithm ("unknown" when it cannot be read).
pub fn host_default() -> String {
    std::fs::read_to_string(HOST_DEFAULT)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// What a namespace should be set to for `asked`: `Some(algorithm)` to write, `None` to leave it
/// as it starts. [`AUTO`] resolves to cubic when namespaces may use it.
pub fn to_set(asked: &str) -> Option<String> {
    match asked {
        INHERIT => None,
        AUTO if allowed().iter().any(|a| a == PREFERRED) => Some(PREFERRED.into()),
        AUTO => None,
        a => Some(a.into()),
    }
}

/// Why [`AUTO`] did not set cubic here, for the router's start-up line; `None` when it did or
/// when another value was asked for.
pub fn auto_note(asked: &str) -> Option<String> {
    (asked == AUTO && to_set(AUTO).is_none()).then(|| {
        format!(
            "auto: {PREFERRED} is not allowed in a namespace here (net.ipv4.\
             tcp_allowed_congestion_control: {}), so the host's, {}",
            allowed().join(" "),
            host_default()
        )
    })
}

/// Why a namespace refused `algorithm`: the kernel lacks it or does not allow it in namespaces;
/// the message names both lists.
pub fn refusal(algorithm: &str) -> String {
    let (available, allowed) = (available().join(" "), allowed().join(" "));
    format!(
        "this kernel has: {available}; a namespace may use: {allowed} \
         (net.ipv4.tcp_allowed_congestion_control; `{AUTO}` picks {PREFERRED} where allowed, else \
         the host's; load a missing one with modprobe tcp_{algorithm})"
    )
}

/// Checks `asked` before any namespace is made: [`AUTO`], [`INHERIT`], or an algorithm a
/// namespace may set here.
///
/// # Errors
/// The algorithm is not loaded or not allowed in namespaces; the message names what is.
pub fn check(asked: &str) -> Result<(), String> {
    if asked == AUTO || asked == INHERIT || allowed().iter().any(|a| a == asked) {
        return Ok(());
    }
    let why = if available().iter().any(|a| a == asked) {
        "not allowed in a network namespace on this kernel"
    } else {
        "not among this kernel's loaded algorithms"
    };
    Err(format!(
        "--tcp-congestion {asked}: {why}; {}",
        refusal(asked)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_sets_cubic_only_where_namespaces_may_use_it() {
        let cubic_allowed = allowed().iter().any(|a| a == "cubic");
        assert_eq!(to_set(AUTO).is_some(), cubic_allowed);
        assert_eq!(auto_note(AUTO).is_some(), !cubic_allowed);
        assert_eq!(to_set(INHERIT), None);
        assert_eq!(to_set("reno").as_deref(), Some("reno"));
        assert_eq!(auto_note("reno"), None);
    }

    #[test]
    fn check_refuses_unknown_and_disallowed_algorithms_by_name() {
        assert!(check(AUTO).is_ok() && check(INHERIT).is_ok());
        let e = check("nosuchcc").unwrap_err();
        assert!(
            e.contains("--tcp-congestion nosuchcc: not among this kernel's loaded algorithms")
                && e.contains("a namespace may use"),
            "{e}"
        );
        for a in allowed() {
            assert!(check(&a).is_ok(), "{a}");
        }
        if let Some(a) = available().into_iter().find(|a| !allowed().contains(a)) {
            let e = check(&a).unwrap_err();
            assert!(e.contains("not allowed in a network namespace"), "{e}");
        }
    }
}
