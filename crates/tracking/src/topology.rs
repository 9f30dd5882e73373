//! Tracking components and their upstream relation.
//!
//! Vertices are grouped into tracking components that form a DAG numbered in topological order
//! (docs/design.md, "trAcker requirements"): every upstream component of `c` has a smaller id than `c`. A cycle of the
//! vertex graph must lie inside one component.

use crate::ack::ComponentId;

/// The component DAG the tracker needs: for every component, the components directly upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    upstream: Vec<Vec<ComponentId>>,
}

impl Topology {
    /// Builds a topology from per-component upstream lists.
    ///
    /// # Errors
    /// When an upstream id is not smaller than its component's id (not topologically numbered, or a
    /// cycle across components), naming the offending pair.
    pub fn new(upstream: Vec<Vec<ComponentId>>) -> Result<Self, String> {
        for (c, ups) in upstream.iter().enumerate() {
            for &u in ups {
                if u as usize >= c {
                    return Err(format!(
                        "component {u} is upstream of component {c}: components must be numbered \
                         in topological order (a cycle must lie inside one component)"
                    ));
                }
            }
        }
        Ok(Topology { upstream })
    }

    /// A chain `0 -> 1 -> ... -> n-1`.
    pub fn chain(n: usize) -> Self {
        Topology {
            upstream: (0..n)
                .map(|c| {
                    if c == 0 {
                        vec![]
                    } else {
                        vec![c as ComponentId - 1]
                    }
                })
                .collect(),
        }
    }

    /// Number of components.
    pub fn len(&self) -> usize {
        self.upstream.len()
    }

    /// True when there are no components.
    pub fn is_empty(&self) -> bool {
        self.upstream.is_empty()
    }

    /// Components directly upstream of `c`.
    pub fn upstream(&self, c: ComponentId) -> &[ComponentId] {
        &self.upstream[c as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_topological_numbering() {
        assert!(Topology::new(vec![vec![], vec![0], vec![0, 1]]).is_ok());
        let e = Topology::new(vec![vec![1], vec![]]).unwrap_err();
        assert!(e.contains("component 1 is upstream of component 0"), "{e}");
        assert!(Topology::new(vec![vec![0]]).is_err()); // self loop
    }
}
