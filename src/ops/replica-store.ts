// The sources store with read replicas: writes, and what must see them at once (the diagnosis of
// a rejected write), go to the primary's store; reads that tolerate lag (one source, listings,
// the extent) go to a replica's store when ops/replicas.ts picks one that has replayed what the
// request must see, else to the primary's. Each store is the plain or the fast one (app.ts), so
// this layer wraps either and the routes cannot tell.
import { classifyDbError } from '../db/errors.js'
import type { SourceStore } from '../sources/sources.store.js'
import { type Replica, type Replicas, readContext } from './replicas.js'

/** Hot standby cancelled a read that conflicted with replay (recovery conflict): the primary answers it. */
const RECOVERY_CONFLICT = '40001'

export function replicaSourceStore (primary: SourceStore, replicas: Replicas, storeOf: (replica: Replica) => SourceStore): SourceStore {
  const stores = new Map(replicas.list.map((r) => [r, storeOf(r)]))
  async function read<T> (run: (store: SourceStore) => Promise<T>): Promise<T> {
    const replica = await replicas.pick(replicas.minLsnOf(readContext.getStore()))
    if (replica !== undefined) {
      try {
        const answer = await run(stores.get(replica) as SourceStore)
        replicas.reads.inc({ pool: replica.name })
        return answer
      } catch (err) {
        const unavailable = classifyDbError(err)?.kind === 'unavailable'
        if (!unavailable && (err as { code?: unknown }).code !== RECOVERY_CONFLICT) throw err
        if (unavailable) replicas.markDown(replica, err)
      }
    }
    replicas.reads.inc({ pool: 'primary' })
    return await run(primary)
  }
  async function wrote (): Promise<void> {
    const ctx = readContext.getStore()
    replicas.wrote(ctx, await replicas.lsnAfterWrite())
  }
  return {
    ...primary,
    find: (id, scope, output) => read((s) => s.find(id, scope, output)),
    list: (input) => read((s) => s.list(input)),
    listFirst: (input) => read((s) => s.listFirst(input)),
    pageAttributeTypes: (input) => read((s) => s.pageAttributeTypes(input)),
    extent: (scope) => read((s) => s.extent(scope)),
    insert: async (insert) => {
      const conflicts = await primary.insert(insert)
      await wrote()
      return conflicts
    },
    insertIf: async (insert, keep, keys) => {
      const outcome = await primary.insertIf(insert, keep, keys)
      if (outcome.kept) await wrote()
      return outcome
    },
    versions: (id, scope, page, output) => read((s) => s.versions(id, scope, page, output)),
    versionAt: (id, scope, at, output) => read((s) => s.versionAt(id, scope, at, output)),
    update: async (change, edit, keys) => {
      const row = await primary.update(change, edit, keys)
      if (row !== undefined) await wrote()
      return row
    },
    delete: async (change) => {
      const version = await primary.delete(change)
      if (version !== undefined) await wrote()
      return version
    }
  }
}
