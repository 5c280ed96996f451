// CPU time a process and a PostgreSQL cluster have used, from /proc (Linux), for benchmarks on a
// machine shared with other loads: the CPU a request costs every process on its path (generator,
// service, PostgreSQL) does not depend on how many other processes compete for the cores, where
// requests a second do.
import { readFileSync, readdirSync } from 'node:fs'

const TICK_MS = 10 // USER_HZ is 100 on Linux

/** utime, stime, cutime, cstime and the parent pid of a process (ms), or undefined when it is gone. */
function stat (pid) {
  let text
  try { text = readFileSync(`/proc/${pid}/stat`, 'utf8') } catch { return undefined }
  // The command name may hold spaces: fields are counted after its closing parenthesis.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { ppid: Number(f[1]), self: (Number(f[11]) + Number(f[12])) * TICK_MS, children: (Number(f[13]) + Number(f[14])) * TICK_MS }
}

/** CPU ms a process (all its threads) has used so far. */
export const processCpuMs = (pid) => stat(pid)?.self ?? 0

/**
 * CPU ms a PostgreSQL cluster has used so far: the postmaster, its live children, and the
 * children it has reaped (a backend that ended between two readings is counted whole in the
 * second, so a difference of two readings is the CPU used between them).
 */
export function clusterCpuMs (postmasterPid) {
  const root = stat(postmasterPid)
  if (root === undefined) throw new Error(`no postmaster ${postmasterPid}`)
  let ms = root.self + root.children
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const s = stat(name)
    if (s !== undefined && s.ppid === postmasterPid) ms += s.self
  }
  return ms
}

/** The postmaster's pid of the database a pg client is connected to (needs a superuser: data_directory). */
export async function postmasterPid (db) {
  const dir = (await db.query(`SELECT current_setting('data_directory') AS d`)).rows[0].d
  return Number(readFileSync(`${dir}/postmaster.pid`, 'utf8').split('\n')[0])
}
