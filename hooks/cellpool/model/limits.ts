/**
 * The bounds on what a pool's author controls, so that no pool, and no request, makes the sync
 * hook build an answer out of proportion to what it was sent.
 *
 * A pool spec, its join template and the objects labelled as its cells are written by a tenant;
 * the hook copies parts of them once per cell (node labels and annotations into every CellNodeSet
 * entry, the join template into every bootstrap Secret, the guestTemplate into every SwiftGuest).
 * Each size bound below is checked from sizes and counts before anything is built (build/sizes.ts,
 * build/bootstrap.ts), and a pool past one gets a status condition naming the field and the bound,
 * with its existing cells kept exactly as they are. Each is far above what a real pool needs, and
 * each keeps the objects the hook writes within what the API server stores:
 *
 * - bootstrap data per cell, as rendered: 64 KiB. Metacontroller keeps the object it applied in the
 *   annotation `metacontroller.k8s.io/last-applied-configuration`, and the API server takes at
 *   most 256 KiB of annotations on any object; the cell's Secret holds the data twice (`user-data`
 *   and `value`) in base64, so its record passes 256 KiB from about 96 KiB of data, and the Secret
 *   could never be created. A cloud-init join script with a CA bundle is a few KiB (EC2 takes
 *   16 KiB of user data, Azure 64 KiB).
 * - tokens in the join template: 256. A join template names each token once or twice.
 * - node labels and annotations together: 16 KiB of keys and values. Every cell Node carries them,
 *   and the API server takes 256 KiB of annotations on a Node in all, which HAMi's registration
 *   and other agents share. A pool labels its Nodes with a dozen labels and a few annotations,
 *   well under 2 KiB.
 * - the guestTemplate: 64 KiB as JSON. Every cell's SwiftGuest, and its last-applied record,
 *   carries a copy; a SwiftGuestSpec holds references to images, classes and networks, about 1 KiB.
 * - the pool's CellNodeSet: one entry per cell, each carrying the node labels, annotations and
 *   taints, and all of it in Metacontroller's last-applied record, an annotation of at most
 *   256 KiB. So the desired size (`replicas`, or `autoscaling.maxReplicas`) may ask for a spec of
 *   192 KiB, and the cells a pool holds (draining and being created included) may make one of
 *   240 KiB in the sync hook. With a dozen labels, a few annotations and a taint an entry is
 *   about 600 bytes: some 300 cells in one pool.
 *
 * A failed cell is rebuilt at its index after a growing backoff, a bounded number of times
 * (plan/scaling.ts).
 *
 * The sync hook also renders at most {@link MAX_BUILT_PER_ANSWER} bootstrap Secrets and builds at
 * most as many SwiftGuests per answer; the rest follow in the next syncs, which the new children
 * trigger. With these, an answer is the observed children it keeps (at most the request), the
 * status (a row per cell), at most 240 KiB of CellNodeSet and a few new children of at most a few
 * hundred KiB each.
 */
/** A kibibyte and a mebibyte, in bytes. */
export const KiB = 1024
export const MiB = 1024 * KiB

/** The largest bootstrap data of one cell, in bytes, as rendered. */
export const MAX_BOOTSTRAP_BYTES = 64 * KiB
/** The most tokens (bare names between double braces, known or not) in a join template. */
export const MAX_TEMPLATE_TOKENS = 256
/** The most bytes of node label and annotation keys and values together. */
export const MAX_NODE_METADATA_BYTES = 16 * KiB
/** The largest guestTemplate, in bytes of JSON. */
export const MAX_GUEST_TEMPLATE_BYTES = 64 * KiB
/** The largest CellNodeSet the desired size may ask for, in bytes of JSON (admission and the spec check). */
export const MAX_NODE_SET_DESIRED_BYTES = 192 * KiB
/**
 * The largest CellNodeSet the sync hook answers for the cells a pool holds: what fits, with room
 * for the rest of the object, in the 256 KiB of annotations that hold Metacontroller's record.
 */
export const MAX_NODE_SET_BYTES = 240 * KiB
/** Bootstrap Secrets rendered, and SwiftGuests built, in one answer at most. */
export const MAX_BUILT_PER_ANSWER = 2
/** The highest cell index: a cell name's index has at most five digits. */
export const WIDEST_CELL_INDEX = 99999

/** First backoff before a Failed index is rebuilt. */
export const BACKOFF_START_SECONDS = 30
/** Longest backoff. */
export const BACKOFF_MAX_SECONDS = 30 * 60
/** Failures of one index after which it is not rebuilt any more. */
export const MAX_INDEX_FAILURES = 5
/** Failures in all after which a pool none of whose cells was ever Ready stops creating. */
export const MAX_POOL_FAILURES_NEVER_READY = 3
