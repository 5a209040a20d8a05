//! A progress bar on stderr for memsim's long commands: drawn only when stderr is a terminal,
//! so scripts, pipes and the tests see nothing of it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` units (`0`: unknown, a counter with a spinner), named by `unit`.
pub fn bar(total: u64, unit: &str) -> ProgressBar {
    let bar = match total {
        0 => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        n => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
    };
    let template = match total {
        0 => format!("{{spinner}} {{pos}} {unit} {{elapsed}}"),
        _ => format!("{{bar:40}} {{pos}}/{{len}} {unit} {{elapsed}} (ETA {{eta}})"),
    };
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}
