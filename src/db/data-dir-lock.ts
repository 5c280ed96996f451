// One process per embedded data directory. The lock is a directory, `.lock` (mkdir is atomic),
// holding owner.json: the owner's pid, its start time and host. A live owner keeps the lock; an
// owner that died without releasing it (kill -9, a crash, power loss) is recognised at once by
// its pid being gone, or taken by another process since (the start time differs), and the next
// process takes the lock over without waiting for any staleness period, so a supervisor's
// immediate restart succeeds.
//
// Taking over renames the dead owner's `.lock` to `.lock.dead-<its pid>-<its start>`. Two
// processes taking over the same dead owner race on that rename: the second finds the target
// already there (ENOTEMPTY) and starts again, reading the winner's live lock. Renamed locks are
// removed only once they are a minute old, so that a slow contender can never rename a live lock
// in their place.
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

export class DataDirInUseError extends Error {}

interface Owner { pid: number, started: string | null, host: string }

const LOCK = '.lock'
const OWNER = 'owner.json'
const DEAD_KEPT_MS = 60_000
// An owner writes owner.json right after its mkdir; a lock without one for longer died in between.
const OWNERLESS_GRACE_MS = 2_000

/** A process's start time (clock ticks since boot, Linux), or null where /proc cannot tell. */
function startTime (pid: number | 'self'): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 22 of /proc/<pid>/stat; the command name (field 2) may hold spaces and ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

function isAlive (owner: Owner): boolean {
  // Another host's pid means nothing here: its lock is never taken over.
  if (owner.host !== hostname()) return true
  try {
    process.kill(owner.pid, 0)
  } catch (err) {
    if ((err as { code?: string }).code !== 'EPERM') return false
  }
  // Alive, but is it the same process? A pid is reused after its owner dies.
  const started = startTime(owner.pid)
  return owner.started === null || started === null || started === owner.started
}

async function readOwner (lock: string): Promise<Owner | undefined> {
  try {
    return JSON.parse(await readFile(join(lock, OWNER), 'utf8')) as Owner
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') return undefined
    throw err
  }
}

async function removeOldDeadLocks (dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.startsWith(`${LOCK}.dead-`)) continue
    const path = join(dir, name)
    const { mtimeMs } = await stat(path).catch(() => ({ mtimeMs: Date.now() }))
    if (Date.now() - mtimeMs > DEAD_KEPT_MS) await rm(path, { recursive: true, force: true })
  }
}

export interface DataDirLock {
  /** The owner that was taken over, when the previous one had died holding the lock. */
  tookOverFrom?: Owner
  release: () => Promise<void>
}

/** Takes the lock of `dir`; DataDirInUseError when a live process holds it. */
export async function lockDataDir (dir: string): Promise<DataDirLock> {
  const lock = join(dir, LOCK)
  const me: Owner = { pid: process.pid, started: startTime('self'), host: hostname() }
  let tookOverFrom: Owner | undefined
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      await mkdir(lock)
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') throw err
      const owner = await readOwner(lock)
      let deadName: string
      if (owner === undefined) {
        const { mtimeMs } = await stat(lock).catch(() => ({ mtimeMs: Date.now() }))
        if (Date.now() - mtimeMs < OWNERLESS_GRACE_MS) {
          await new Promise((resolve) => setTimeout(resolve, 100))
          continue
        }
        deadName = `${LOCK}.dead-unknown-${Math.round(mtimeMs)}`
      } else if (isAlive(owner)) {
        throw new DataDirInUseError(`data directory ${dir} is in use by another process (pid ${owner.pid}${owner.host !== me.host ? ` on ${owner.host}` : ''}: a running service or CLI); stop it first`)
      } else {
        deadName = `${LOCK}.dead-${owner.pid}-${owner.started ?? 'unknown'}`
      }
      try {
        await rename(lock, join(dir, deadName))
        tookOverFrom = owner
      } catch (renameErr) {
        // ENOENT: someone released or renamed it first. ENOTEMPTY/EEXIST: another process took
        // over this same dead owner. Either way, look again.
        if (!['ENOENT', 'ENOTEMPTY', 'EEXIST'].includes((renameErr as { code?: string }).code ?? '')) throw renameErr
      }
      continue
    }
    const tmp = join(lock, `${OWNER}.${process.pid}.tmp`)
    await writeFile(tmp, JSON.stringify(me))
    await rename(tmp, join(lock, OWNER))
    await removeOldDeadLocks(dir)
    return {
      tookOverFrom,
      release: async () => {
        const owner = await readOwner(lock).catch(() => undefined)
        if (owner?.pid === me.pid && owner.started === me.started) await rm(lock, { recursive: true, force: true })
      }
    }
  }
  throw new DataDirInUseError(`data directory ${dir}: could not take its lock (other processes keep taking it)`)
}
