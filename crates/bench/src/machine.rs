//! What a committed report says of the machine it ran on.

/// `/proc/cpuinfo`'s first "model name", with its family and model, e.g. "AMD EPYC (cpu family
/// 26, model 2)": a virtual machine's model name may be as short as "AMD EPYC", and the family
/// tells a Zen 4 from a Zen 5 (issue 51: every committed report names the CPU model).
/// "unknown" without `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        (info.lines())
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    match (field("model name"), field("cpu family"), field("model")) {
        (Some(name), Some(family), Some(model)) => {
            format!("{name} (cpu family {family}, model {model})")
        }
        (Some(name), ..) => name,
        _ => "unknown".into(),
    }
}
