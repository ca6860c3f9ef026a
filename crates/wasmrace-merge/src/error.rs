//! Why parts do not merge: one variant per refusal, each displayed as the
//! one line `wasmrace merge` prints (parts named as the caller named them,
//! quoted values escaped and clipped).

/// Why a part was refused, or why the parts are not the partitions of one
/// run: a [`MergeErrorKind`], boxed so that results stay small.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct MergeError(Box<MergeErrorKind>);

impl MergeError {
    /// Which refusal it is, with its values.
    pub fn kind(&self) -> &MergeErrorKind {
        &self.0
    }
}

impl From<MergeErrorKind> for MergeError {
    fn from(kind: MergeErrorKind) -> Self {
        MergeError(Box::new(kind))
    }
}

/// The refusals. Parts are named by the name given to
/// [`Part::new`](crate::Part::new) (and [`parse`](crate::parse)), in
/// backquotes.
#[derive(Debug, thiserror::Error)]
pub enum MergeErrorKind {
    /// No part was given.
    #[error("no part to merge")]
    NoParts,
    /// The part's bytes are not UTF-8.
    #[error("`{part}` is not valid JSON: not UTF-8")]
    NotUtf8 {
        /// The part's name.
        part: String,
    },
    /// The part's text is not JSON (or nests deeper than the parser's
    /// recursion limit).
    #[error("`{part}` is not valid JSON")]
    NotJson {
        /// The part's name.
        part: String,
        /// What the parser said.
        #[source]
        cause: serde_json::Error,
    },
    /// The document lacks what every `check --partition --json` output has
    /// (tests, each with its name, partition and executions; the module's
    /// hash).
    #[error("`{part}` is not the --json output of `wasmrace check --partition`")]
    NotAPart {
        /// The part's name.
        part: String,
    },
    /// A real race without the numeric `key` races merge by.
    #[error("`{part}` lists real races without their `key`: write it again with this wasmrace")]
    RacesWithoutKey {
        /// The part's name.
        part: String,
    },
    /// One of two parts does not record the host settings of a test.
    #[error(
        "`{first}` or `{other}` does not record the settings test `{test}` ran under: write \
         them again with this wasmrace"
    )]
    NoSettings {
        /// The first part's name.
        first: String,
        /// The other part's name.
        other: String,
        /// The test, escaped and clipped.
        test: String,
    },
    /// Two parts ran a test under a different host setting.
    #[error(
        "`{first}` and `{other}` ran test `{test}` with a different `{setting}` (`{a}` and \
         `{b}`): not partitions of one run"
    )]
    SettingDiffers {
        /// The first part's name.
        first: String,
        /// The other part's name.
        other: String,
        /// The test, escaped and clipped.
        test: String,
        /// The setting, escaped and clipped.
        setting: String,
        /// The first part's value, as errors quote one.
        a: String,
        /// The other part's value.
        b: String,
    },
    /// Two parts are reports of different modules.
    #[error(
        "`{first}` and `{other}` are reports of different modules (blake3 `{a}` and `{b}`): not \
         partitions of one run"
    )]
    DifferentModules {
        /// The first part's name.
        first: String,
        /// The other part's name.
        other: String,
        /// The first part's hash, as errors quote one.
        a: String,
        /// The other part's hash.
        b: String,
    },
    /// Two parts checked different tests.
    #[error(
        "`{first}` and `{other}` checked different tests (`{a}` and `{b}`): not partitions of one \
         run"
    )]
    DifferentTests {
        /// The first part's name.
        first: String,
        /// The other part's name.
        other: String,
        /// The first part's tests, as errors quote a value.
        a: String,
        /// The other part's tests.
        b: String,
    },
    /// Two parts differ in the strategy, seed, options or partitioning of
    /// a test.
    #[error(
        "`{first}` and `{other}` differ in the {what} of test `{test}` (`{a}` and `{b}`): not \
         partitions of one run"
    )]
    Differ {
        /// The first part's name.
        first: String,
        /// The other part's name.
        other: String,
        /// What differs (`strategy`, `partition count`, ...).
        what: &'static str,
        /// The test, escaped and clipped.
        test: String,
        /// The first part's value, as errors quote one.
        a: String,
        /// The other part's value.
        b: String,
    },
    /// A part's `K/N` is not a partition.
    #[error(
        "`{part}` names partition `{k}/{n}`, which is not a partition `K/N` (1 <= K <= N <= {max})",
        max = u32::MAX
    )]
    NotAPartition {
        /// The part's name.
        part: String,
        /// Its `K`.
        k: u64,
        /// Its `N`.
        n: u64,
    },
    /// A part deals a test out otherwise than `check --partition` does.
    #[error(
        "`{part}` does not deal test `{test}` to partition {due}/{n} as `check --partition` \
         does: not partitions of one run"
    )]
    Dealing {
        /// The part's name.
        part: String,
        /// The test, escaped and clipped.
        test: String,
        /// The partition the test is dealt to.
        due: u64,
        /// `N`.
        n: u64,
    },
    /// Two parts are the same partition.
    #[error("partition {k}/{n} is given twice: `{first}` and `{other}`")]
    GivenTwice {
        /// The partition's `K`.
        k: u64,
        /// `N`.
        n: u64,
        /// The first part's name.
        first: String,
        /// The other part's name.
        other: String,
    },
    /// A partition has no part.
    #[error(
        "partition {k}/{n} is missing: {given} part{s} given for {n} partitions",
        s = if *given == 1 { "" } else { "s" }
    )]
    Missing {
        /// The missing partition's `K`.
        k: u64,
        /// `N`.
        n: u64,
        /// How many parts were given.
        given: usize,
    },
    /// No part explored a test (each says it did not run it).
    #[error("no part ran test `{test}`: not partitions of one run")]
    NotRun {
        /// The test, escaped and clipped.
        test: String,
    },
    /// A count added up over the parts does not fit in a `u64`.
    #[error("the parts' `{count}` of test `{test}` add up past {max}: not partitions of one run", max = u64::MAX)]
    Overflow {
        /// The count (`executions`, `partition.skipped`, `races.count`, ...).
        count: String,
        /// The test, escaped and clipped.
        test: String,
    },
}
