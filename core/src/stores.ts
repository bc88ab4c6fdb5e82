import type { ConsoleOutput, FunctionLatency } from './insight.ts';
import type { KvQuota, KvSetResult, KvUsage } from './kv-quota.ts';
import type {
  ExecutionLog, FunctionRecord, RecordedExchange, LogPage, LogQuery, NetworkPolicy, NetworkPolicyChange, RetentionPolicy,
} from './model.ts';
import type { ScheduleRun } from './schedule-ledger.ts';
import type { FunctionIdHome } from './function-id-home.ts';
import type { AsyncCallback } from './async-callback.ts';
import type { AcceptResult, AsyncBounds, AsyncCall, AsyncCompletion, AsyncCompletionWrite, AsyncState, AsyncStats, NewAsyncCall } from './async-call.ts';
import type { RecountResult, UsageDrift } from './async-recount.ts';

// The storage seams. One machine implements them on node:sqlite
// (core/src/store/sqlite/), a cluster on MongoDB (core/src/store/mongo/); in
// cluster mode functions come from Function resources instead. One contract
// suite (test/core/store-contract.ts) runs against every implementation.
//
// Times are passed in (`now`, ms since epoch) so tests control the clock.

export interface FunctionStore {
  /** Throws ConflictError when (namespace, name) or function_id is taken. */
  create(fn: FunctionRecord): Promise<void>;
  get(functionId: string): Promise<FunctionRecord | null>;
  getByName(namespace: string, name: string): Promise<FunctionRecord | null>;
  /** Sorted by name; all namespaces when none is given. */
  list(namespace?: string): Promise<FunctionRecord[]>;
  /**
   * Replaces the stored record; throws NotFoundError when it is gone. `basis` is the record the
   * change was made from: a store whose reads may lag another writer (cluster mode's watch-fed
   * cache) throws ConcurrentChangeError when what is stored is no longer it, rather than undo
   * the other writer's change.
   */
  update(fn: FunctionRecord, basis?: FunctionRecord): Promise<void>;
  delete(functionId: string): Promise<boolean>;
  /**
   * Reads one function again from where it is kept, so that a read-modify-write starts from the
   * truth (cluster mode: the API server, which another gateway's write reaches before this
   * gateway's watch does). Absent where every read is of the truth already.
   */
  refresh?(namespace: string, name: string): Promise<void>;
}

/** A log record as stored: `expires_at` (ms) is when time retention lets it go, null otherwise. */
export interface StoredLog extends ExecutionLog {
  expires_at: number | null;
  /**
   * The execution's request and response, when its function records them
   * (RequestRecording): stored by LogStore.insert with the record, under the
   * same retention, and read only through ExchangeStore (never in listings).
   */
  exchange?: RecordedExchange;
}

/** What ExchangeStore.get finds for a log id. */
export type ExchangeLookup =
  /** No record with this id is visible for the function (never was, or retention let it go). */
  | { found: false }
  /** The record, with its exchange, or null when none was kept (the function did not record then). */
  | { found: true; executed_at: string; trigger: ExecutionLog['trigger']; exchange: RecordedExchange | null };

/**
 * The recorded exchanges of execution records (replay, docs/replay.md).
 * Written with their records by LogStore.insert and deleted with them (the
 * retention sweep, a deleted function), so an exchange never outlives its record.
 */
export interface ExchangeStore {
  /** The record `logId` of the function as the retention read filter shows it, and its exchange. */
  get(functionId: string, logId: string, retention: RetentionPolicy, now: number): Promise<ExchangeLookup>;
  /**
   * The bytes the functions' stored exchanges hold (recordedExchangeBytes of
   * each), for a namespace's recorded-bytes total. Exchanges a retention hides
   * may count until its sweep deletes them (MongoDB leaves out those past
   * their time retention at once). One indexed aggregation: the gateway asks
   * periodically, never per call.
   */
  recordedBytes(functionIds: readonly string[], now: number): Promise<number>;
}

export interface LogStore {
  /**
   * Stores a batch (the gateway's writer batches off the request path). With
   * `progress`, the store also records the writer instance's progress in the
   * same unit of work as the batch (see InstanceStore), so that a writer
   * killed at any point of this call leaves an exact count of what it wrote,
   * and adds each record it stores to its function's execution counter
   * (CounterStore) with the batch's counts, each record once: the writer
   * then adds only what it never stores (dropped records). A writer resends a
   * failed batch unchanged (the same records with the same progress).
   */
  insert(records: StoredLog[], progress?: WriterProgress): Promise<InsertResult>;
  /**
   * One function's logs, newest first by executed_at; records with the same
   * executed_at come newest-inserted first, so the order is deterministic.
   * The retention policy is applied as a read filter, so nothing it no longer
   * keeps ever shows, even before enforceRetention runs: type time hides
   * records older than `now - days`; type count shows only the `count` newest
   * (the status filter applies within those). totalCount counts the same set.
   */
  list(functionId: string, query: LogQuery, retention: RetentionPolicy, now: number): Promise<LogPage>;
  /**
   * Applies a (new or unchanged) policy to stored records: rewrites expires_at
   * for type time (null for the others) and deletes what the policy no longer
   * keeps. Returns how many records were deleted.
   */
  applyRetention(functionId: string, retention: RetentionPolicy, now: number): Promise<number>;
  /** Removes every record of a deleted function. */
  deleteFunction(functionId: string): Promise<number>;
  /**
   * How many of a function's stored executions ran at or after `since` (ms),
   * and how many of those were errors (status >= 400): the error rate over a
   * recent window that the cluster gateway writes onto each Function's status.
   * Counts every gateway's records, not only the caller's.
   */
  recentCounts(functionId: string, since: number): Promise<RecentCounts>;
}

export interface RecentCounts {
  total: number;
  errors: number;
}

/**
 * A log writer's cumulative progress (records since its instance started),
 * as of `at` (ms, the writer's clock). Sent with every batch and heartbeat.
 */
export interface WriterProgress {
  /** The writer instance (one per gateway process, random). */
  instance: string;
  /**
   * Records the writer owes so far: those accepted into its queue (this batch
   * and those queued after it included) plus executions running now whose
   * record is still to come.
   */
  accepted: number;
  /** Records the writer will have written once this batch is stored (for a heartbeat: written so far). */
  written: number;
  at: number;
}

/** `instanceLive` false: the batch was stored, but the instance had been taken for dead (or ended) meanwhile. */
export type InsertResult = void | { instanceLive: boolean };

/** A gateway instance as registered. */
export interface InstanceInfo {
  id: string;
  /** The machine or pod name, for the operator reading a warning; never a secret. */
  host: string;
  pid: number;
  startedAt: number;
}

/** A registered instance: live (no `ended`), or ended with what it lost. */
export interface InstanceState extends InstanceInfo {
  /** Its last known progress time (ms). */
  heartbeatAt: number;
  /** Live: as of the last heartbeat or batch. Ended: the counts its end was judged by. */
  accepted: number;
  written: number;
  ended: null | {
    at: number;
    /** `shutdown`: it ended itself; `claimed`: another gateway found it dead. */
    how: 'shutdown' | 'claimed';
    /** The claiming instance (claimed only). */
    by: string | null;
    /** Records accepted and never written: max(0, accepted - written). */
    lost: number;
    /** Of those, records the instance wrote after all (it was alive when claimed; see InstanceStore.recover). */
    recovered: number;
  };
}

/**
 * Gateway instances and the execution records lost by those that died: a
 * killed process cannot count its own loss, so every writer keeps its
 * progress here (with each batch, and by heartbeat when idle), and any
 * gateway that finds an instance whose heartbeat is older than a bound, and
 * that did not end itself, claims it (atomically: no instance is counted
 * twice) and records accepted - written as lost. Ended instances are kept,
 * so the lost total is the sum over them and reads the same everywhere.
 */
export interface InstanceStore {
  register(info: InstanceInfo, now: number): Promise<void>;
  /** Records progress; false when the instance is no longer live (claimed or ended). */
  heartbeat(progress: WriterProgress): Promise<boolean>;
  /**
   * A clean end (after the last flush): the instance is removed when it wrote
   * everything it accepted, else kept as ended with the difference as lost.
   * False when it was no longer live.
   */
  end(progress: WriterProgress, now: number): Promise<boolean>;
  /**
   * Claims every live instance but `claimer` whose heartbeat is older than
   * `now - deadAfterMs` and returns them as claimed, with what was counted.
   * A batch the dead writer had in flight counts by what of it is stored.
   * Where a batch's counts are written apart from its records (MongoDB), the
   * claim also finishes the batches the dead writer left half done: their
   * stored records get their counts and executions, each once.
   */
  claimStale(claimer: string, deadAfterMs: number, now: number): Promise<InstanceState[]>;
  get(id: string): Promise<InstanceState | null>;
  /** A claimed instance that was alive after all wrote `recovered` of the records counted lost (only ever raised). */
  recover(id: string, recovered: number): Promise<void>;
  /** Sums over ended instances. */
  lossTotals(): Promise<{ lost: number; recovered: number; dead: number }>;
}

/**
 * Total executions ever; never derived from the log count, never lowered by
 * retention. A gateway's executions reach it through LogStore.insert with
 * progress (the stored ones) and through add (those whose record was dropped).
 */
export interface CounterStore {
  /** Adds to several functions' counters at once (the writer batches these too). */
  add(increments: ReadonlyMap<string, number>): Promise<void>;
  get(functionId: string): Promise<number>;
  delete(functionId: string): Promise<void>;
}

/**
 * One namespace per function. Values are JSON text; the store does not parse them.
 *
 * Usage (core/src/kv-quota.ts): the store keeps, per namespace, the keys and
 * bytes (UTF-8 key + JSON value) a reader can see, without a scan per write:
 * expired keys never count, whether or not they were deleted yet. A namespace
 * may belong to a group (the function's Kubernetes namespace) whose total a
 * quota can bound too.
 */
export interface KvStore {
  get(namespace: string, key: string, now: number): Promise<string | undefined>;
  /**
   * ttlSeconds null keeps the key until deleted. With a quota, the write is
   * refused (nothing stored) when it would grow the live keys or bytes past
   * it; a write that grows neither always goes through.
   */
  set(namespace: string, key: string, json: string, ttlSeconds: number | null, now: number, quota?: KvQuota): Promise<KvSetResult>;
  /** The namespace's live keys and bytes at `now`. */
  usage(namespace: string, now: number): Promise<KvUsage>;
  /** The live bytes and keys of every namespace written with this group (KvQuota.group), at `now`. */
  groupUsage(group: string, now: number): Promise<KvUsage>;
  has(namespace: string, key: string, now: number): Promise<boolean>;
  delete(namespace: string, key: string): Promise<boolean>;
  /** Live keys starting with prefix, sorted, at most `limit`. */
  list(namespace: string, prefix: string, limit: number, now: number): Promise<string[]>;
  /** Physically removes expired keys (reads already hide them). Returns how many. */
  sweep(now: number): Promise<number>;
  deleteNamespace(namespace: string): Promise<void>;
}

/** `global`, or a function id for that function's own rules. */
export type PolicyScope = 'global' | (string & {});

export interface PolicyStore {
  get(scope: PolicyScope): Promise<NetworkPolicy | null>;
  /** Sets (or with null removes) a scope's policy and records the change. */
  set(scope: PolicyScope, policy: NetworkPolicy | null, actor: string, now: number): Promise<NetworkPolicyChange>;
  /** Newest first. */
  changes(limit: number): Promise<NetworkPolicyChange[]>;
  /** Newest first, each change's id and scope only: what a gateway replica reads every interval to follow the others' changes. */
  changeScopes(limit: number): Promise<Array<Pick<NetworkPolicyChange, 'id' | 'scope'>>>;
}

/**
 * An admin panel session as stored. The cookie's session id itself is never
 * stored, only `idHash`, its SHA-256 (64 hex digits), so a dump of the
 * database hands out no live session. Times are ms since epoch.
 */
export interface StoredSession {
  idHash: string;
  /** A short public label for change records ("who"); not a secret. */
  label: string;
  /** The session's CSRF token, sent back to the page on request. */
  csrf: string;
  createdAt: number;
  /** The last use written (the gateway writes it at most once per part of the idle window). */
  lastSeenAt: number;
  /**
   * When the session ends unless used again: the gateway computes it from the
   * times above and its idle and maximum-age settings. Reads hide a session
   * from this instant on; sweep (SQLite) or a TTL index (MongoDB) deletes it.
   */
  expiresAt: number;
}

/**
 * Admin panel sessions, shared by every gateway that shares the store (the
 * replicas of a cluster on one MongoDB), so a session made through one is
 * known to all, and a sign-out through one ends it for all.
 */
export interface SessionStore {
  /**
   * Stores a new session, then removes the oldest sessions (by createdAt)
   * beyond `keepAtMost`, so sign-ins cannot grow the table without bound.
   */
  create(session: StoredSession, keepAtMost: number): Promise<void>;
  /** The session with this id hash when it has not expired at `now` (expiresAt > now), else null. */
  get(idHash: string, now: number): Promise<StoredSession | null>;
  /**
   * Records a use: lastSeenAt and expiresAt move forward to the given values
   * (never back, should two gateways touch at once). False when the session
   * is gone (signed out meanwhile): nothing is written then.
   */
  touch(idHash: string, lastSeenAt: number, expiresAt: number): Promise<boolean>;
  /** Ends a session (sign-out). True when it existed. */
  delete(idHash: string): Promise<boolean>;
  /** Physically removes sessions expired at `now` (reads already hide them). Returns how many. */
  sweep(now: number): Promise<number>;
}

/**
 * One execution looked up by id, its console output, and per-function latency
 * (core/src/insight.ts). The latency histogram is kept by LogStore.insert in the
 * same unit of work as the records; console output arrives apart from its record
 * (a runtime sends it once its execution's deferred work had its time) and is
 * kept as long as the record: reads go through the record, and applyRetention
 * and deleteFunction remove it with the records.
 */
export interface InsightStore {
  /** The record when the retention policy still shows it, else null. */
  getLog(functionId: string, logId: string, retention: RetentionPolicy, now: number): Promise<ExecutionLog | null>;
  /**
   * Stores executions' output (one post of a runtime, in one unit of work), each once: a second
   * put for the same log id keeps the first. Only beside a stored record of that function
   * (false at that place otherwise, nothing stored), so output never outlives its record nor
   * piles up under ids that name none. `expiresAt` (ms) follows the function's time retention
   * (null otherwise), as records do.
   */
  putConsole(functionId: string, outputs: ReadonlyArray<{ logId: string; output: ConsoleOutput }>, expiresAt: number | null, now: number): Promise<boolean[]>;
  getConsole(functionId: string, logId: string): Promise<ConsoleOutput | null>;
  /** Counts and percentiles over the last hour and day, from the histogram rows alone. */
  latency(functionId: string, now: number): Promise<FunctionLatency>;
}

/** A ledger entry as stored: `expires_at` (ms) is when the function's time retention lets it go, null otherwise. */
export interface StoredScheduleRun extends ScheduleRun {
  expires_at: number | null;
}

/**
 * The ledger of scheduled runs (core/src/schedule-ledger.ts): one entry per
 * planned run (ran or missed) and per manual run, bounded per function.
 */
export interface ScheduleRunStore {
  /** Adds an entry, then deletes the function's oldest entries (by planned_at) beyond `keepAtMost`. */
  add(run: StoredScheduleRun, keepAtMost: number): Promise<void>;
  /** The function's entries newest first by planned_at (then newest added), at most `limit`, hiding those expired at `now`. */
  list(functionId: string, limit: number, now: number): Promise<ScheduleRun[]>;
  /** The newest planned_at (ms) of an entry the schedule planned (manual ones left out), or null. */
  lastPlanned(functionId: string): Promise<number | null>;
  /** Physically removes entries expired at `now` (reads already hide them). Returns how many. */
  sweep(now: number): Promise<number>;
  /** Removes every entry of a deleted function. */
  deleteFunction(functionId: string): Promise<number>;
}

/**
 * Each functionId's home namespace (core/src/function-id-home.ts): written by the cluster
 * operator when it first gives an id, moved only by a granted move, read by the operator and
 * the gateways to decide who may hold an id. Kept after the id's Function is deleted (the id's
 * KV outlives it). One machine keeps the table too (its ids are unique random ones, so it has
 * no use for it yet).
 */
export interface FunctionIdHomeStore {
  get(functionId: string): Promise<FunctionIdHome | null>;
  /** Writes `home` unless the id has one already (atomically: of two racing claims one is stored); returns the stored home. */
  claim(home: FunctionIdHome): Promise<FunctionIdHome>;
  /** Moves the id's home to `to` only if it is in namespace `from` now (compare and set); returns the stored home after, null when none. */
  move(from: string, to: FunctionIdHome): Promise<FunctionIdHome | null>;
}

/** A stored code blob (core/src/code/). Times are ms. */
export interface CodeBlobInfo {
  digest: string;
  size: number;
  /** The newest upload of the blob by any namespace (GC's grace runs from it). */
  uploadedAt: number;
}

/** What CodeStore.put did: `created` false when the blob was stored already (the namespace is recorded as an uploader either way). */
export interface CodePutResult {
  digest: string;
  size: number;
  created: boolean;
}

/** The byte bounds an upload is checked against (docs/gateway.md "The code store"): the store's total of distinct blobs, and a namespace's (each blob it uploaded, whole). */
export interface CodeBounds {
  maxTotalBytes: number;
  maxNamespaceBytes: number;
}

/**
 * Code stored by digest, once (one machine: files under the data folder, SQLite for who uploaded
 * what; MongoDB: GridFS, bucket `code`). Tenancy: the store records which namespaces uploaded a
 * blob, and every read for a namespace that did not is answered as for a missing digest, so a
 * team can neither probe nor run another's code by digest.
 */
export interface CodeStore {
  /**
   * Streams the bytes in (never all in memory), hashing as they come, and stores them under
   * `expectedDigest` when they match (else CodeDigestMismatchError, nothing stored). Past
   * `maxBytes`: CodeTooLargeError; past a bound: CodeStoreFullError. A refused or broken upload
   * leaves nothing behind. Two uploads of one digest at once both succeed, with one blob.
   */
  put(source: AsyncIterable<Uint8Array>, options: { expectedDigest: string; namespace: string; maxBytes: number; bounds: CodeBounds; now: number }): Promise<CodePutResult>;
  /** The blob when `namespace` uploaded it, else null. */
  stat(namespace: string, digest: string): Promise<CodeBlobInfo | null>;
  /**
   * stat for a function about to be written with this reference: also moves the namespace's
   * upload time to `now`, so GC (which deletes only blobs uploaded before its grace) cannot take
   * the blob between this check and the write.
   */
  use(namespace: string, digest: string, now: number): Promise<CodeBlobInfo | null>;
  /** The blob's bytes as a stream when `namespace` uploaded it, else null. */
  openRead(namespace: string, digest: string): Promise<AsyncIterable<Uint8Array> | null>;
  /** Bytes stored: of distinct blobs in all, or of the blobs `namespace` uploaded. */
  usage(namespace?: string): Promise<{ bytes: number; blobs: number }>;
  /** Every blob with its newest upload time (for GC). */
  list(): Promise<CodeBlobInfo[]>;
  /**
   * Removes a blob and its uploaders (GC), only when its newest upload (or use) is before
   * `uploadedBefore` (ms): one uploaded or used again since GC listed it stays. True when removed.
   */
  delete(digest: string, uploadedBefore: number): Promise<boolean>;
}

/**
 * The queue of asynchronous calls (core/src/async-call.ts, docs/async.md).
 * Every write is durable when it returns (SQLite: committed; MongoDB: the
 * strongest write concern the deployment offers). Leases, never TTL deletion:
 * a running call holds a lease (owner, until); a gateway that dies leaves it
 * to expire, and reap() puts it back in the queue for any gateway to claim.
 */
export interface AsyncCallStore {
  /**
   * Stores a new call unless its Idempotency-Key was seen within the window
   * (the first call is returned, nothing stored) or the bytes of the calls
   * holding a request (queued, running, dead) would pass a bound.
   */
  accept(call: NewAsyncCall, bounds: AsyncBounds, now: number): Promise<AcceptResult>;
  /** Functions with a queued call due at `now` (at most `limit`). */
  dueFunctions(now: number, limit: number): Promise<string[]>;
  /**
   * Takes up to `max` of the function's queued calls due at `now`, oldest
   * accepted first, for `owner`, in one store round trip's worth of writes
   * (SQLite: one UPDATE ... RETURNING; MongoDB: one updateMany under a claim
   * token): each becomes running, its attempt counted, leased until
   * `leaseUntil`. A call is taken by one claimer only. Returned in
   * acceptance order.
   */
  claim(functionId: string, owner: string, now: number, leaseUntil: number, max: number): Promise<AsyncCall[]>;
  /**
   * Ends a batch of attempts in one write (SQLite: one transaction; MongoDB:
   * one bulkWrite). Each is written only while its owner holds that attempt's
   * lease; the answer says, in order, which were (false: the lease was lost
   * meanwhile and nothing was written for it).
   */
  completeMany(writes: readonly AsyncCompletionWrite[], now: number): Promise<boolean[]>;
  /** Running calls whose lease expired at `now` go back to the queue (their attempt noted as lost). Returns how many. */
  reap(now: number): Promise<number>;
  get(functionId: string, id: string): Promise<AsyncCall | null>;
  /** The function's calls in these states, oldest accepted first, at most `limit`. */
  list(functionId: string, states: readonly AsyncState[], limit: number): Promise<AsyncCall[]>;
  /** Dead calls (all of the function's, or these ids) back to the queue as new: attempts from 0, due at once, aged from `now`. Returns how many. */
  requeue(functionId: string, ids: readonly string[] | 'all', now: number): Promise<number>;
  /** Records how the call's callback went (it has one); false when the call is gone. */
  setCallback(functionId: string, id: string, callback: AsyncCallback): Promise<boolean>;
  /**
   * Takes up to `max` ended calls whose callback is pending and held by nobody: its lease
   * passed `now`, or it was never leased and the call ended before `staleBefore` (the gateway
   * that ended it died before sending). Each is leased until `leaseUntil` and returned.
   */
  claimCallbacks(now: number, staleBefore: number, leaseUntil: number, max: number): Promise<AsyncCall[]>;
  stats(): Promise<AsyncStats>;
  /** Deletes finished and dead calls past their kept_until. Returns how many. */
  sweep(now: number): Promise<number>;
  deleteFunction(functionId: string): Promise<number>;
  /**
   * Corrects the byte counts that drifted from the calls holding a request
   * (async-recount.ts: the same drift seen by this pass and `previous`, the
   * last pass's). Where the counts are written with the calls (SQLite), none drift.
   */
  recount(previous: UsageDrift): Promise<RecountResult>;
}

export interface Stores {
  functions: FunctionStore;
  homes: FunctionIdHomeStore;
  logs: LogStore;
  insight: InsightStore;
  exchanges: ExchangeStore;
  counters: CounterStore;
  kv: KvStore;
  policies: PolicyStore;
  instances: InstanceStore;
  sessions: SessionStore;
  scheduleRuns: ScheduleRunStore;
  code: CodeStore;
  asyncCalls: AsyncCallStore;
  close(): Promise<void>;
}
