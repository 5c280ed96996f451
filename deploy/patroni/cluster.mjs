// The HA set-up on one machine, for trying it and for the fault tests and benchmarks: one etcd
// (the DCS) and N PostgreSQL nodes, each run by its own Patroni (deploy/patroni/patroni.yml with
// loopback addresses and free ports), all in one temporary directory, as the `postgres` user
// when started as root (PostgreSQL refuses root). The first node to start becomes the primary,
// the others stream from it; with synchronous mode one of them is the synchronous standby.
//
//   node deploy/patroni/cluster.mjs start [--dir DIR] [--nodes 2] [--async]   (prints DATABASE_URL; returns once it is ready)
//   node deploy/patroni/cluster.mjs status --dir DIR
//   node deploy/patroni/cluster.mjs kill --dir DIR NAME     (SIGKILL a node: its Patroni and PostgreSQL, as a machine dies)
//   node deploy/patroni/cluster.mjs start-node --dir DIR NAME
//   node deploy/patroni/cluster.mjs stop --dir DIR          (stops everything and removes DIR)
//
// As a module: startHaCluster(opts) → { url, nodes, leader(), waitReady(), kill(name), startNode(name), stop() }.
import { spawn, spawnSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { binDir, freePort, uidGid } from '../../scripts/postgis.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const asRoot = process.getuid?.() === 0
const owner = asRoot ? uidGid('postgres') : undefined

/** Whether Patroni and etcd are installed (apt-get install patroni etcd-server python3-etcd). */
export function haToolsInstalled () {
  return ['/usr/bin/patroni', '/usr/bin/etcd'].every((f) => existsSync(f)) &&
    spawnSync('/usr/bin/python3', ['-c', 'import etcd'], { stdio: 'ignore' }).status === 0
}

const yamlString = (s) => JSON.stringify(s)

function own (path) {
  if (owner !== undefined) chownSync(path, ...owner)
}

function spawnOwned (cmd, args, logFile, env = {}) {
  const out = openSync(logFile, 'a')
  const child = spawn(cmd, args, {
    stdio: ['ignore', out, out],
    detached: true,
    env: { PATH: process.env.PATH, HOME: tmpdir(), LANG: 'C.UTF-8', ...env },
    ...(owner !== undefined ? { uid: owner[0], gid: owner[1] } : {})
  })
  child.unref()
  return child.pid
}

const alive = (pid) => {
  try { process.kill(pid, 0); return true } catch { return false }
}

/** The pids of a process's children (from /proc). */
function childrenOf (pid) {
  const out = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) out.push(Number(entry))
    } catch { /* gone */ }
  }
  return out
}

function loadState (dir) {
  return JSON.parse(readFileSync(join(dir, 'cluster.json'), 'utf8'))
}

function saveState (state) {
  writeFileSync(join(state.dir, 'cluster.json'), JSON.stringify(state, null, 2))
}

function nodeConfig (state, node) {
  const template = readFileSync(join(here, 'patroni.yml'), 'utf8')
  const archive = join(state.dir, 'archive')
  const values = {
    NAME: node.name,
    API_HOST: '127.0.0.1',
    API_PORT: String(node.apiPort),
    ETCD_HOSTS: yamlString(`127.0.0.1:${state.etcd.clientPort}`),
    SYNCHRONOUS_MODE: state.synchronous ? 'true' : 'false',
    ARCHIVE_COMMAND: yamlString(state.archiveCommand ?? `test ! -f ${archive}/%f && cp %p ${archive}/%f`),
    RESTORE_COMMAND: yamlString(`cp ${archive}/%f %p`),
    PG_HBA_NETWORK: '127.0.0.1/32',
    PG_HBA_METHOD: 'trust',
    PG_HOST: '127.0.0.1',
    PG_PORT: String(node.pgPort),
    DATA_DIR: join(state.dir, node.name, 'data'),
    BIN_DIR: binDir(),
    PGPASS: join(state.dir, node.name, 'pgpass'),
    SUPERUSER_PASSWORD: 'trial-only',
    REPLICATION_PASSWORD: 'trial-only',
    SOCKET_DIR: yamlString(join(state.dir, node.name))
  }
  return template.replace(/\$\{([A-Z_]+)\}/g, (_, key) => {
    if (!(key in values)) throw new Error(`patroni.yml: no value for \${${key}}`)
    return values[key]
  })
}

function startEtcd (state) {
  const { clientPort, peerPort } = state.etcd
  const data = join(state.dir, 'etcd')
  mkdirSync(data, { recursive: true, mode: 0o700 })
  own(data)
  state.etcd.pid = spawnOwned('/usr/bin/etcd', [
    '--name', 'etcd0', '--data-dir', data,
    '--listen-client-urls', `http://127.0.0.1:${clientPort}`, '--advertise-client-urls', `http://127.0.0.1:${clientPort}`,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `etcd0=http://127.0.0.1:${peerPort}`, '--initial-cluster-state', 'new'
  ], join(state.dir, 'etcd.log'))
}

function startNodeProcess (state, node) {
  const nodeDir = join(state.dir, node.name)
  mkdirSync(nodeDir, { recursive: true })
  own(nodeDir)
  const config = join(nodeDir, 'patroni.yml')
  writeFileSync(config, nodeConfig(state, node))
  own(config)
  node.pid = spawnOwned('/usr/bin/patroni', [config], join(nodeDir, 'patroni.log'))
  node.postmaster = undefined
}

/** The node's postmaster pid, from its data directory. */
function postmasterOf (state, node) {
  try {
    return Number(readFileSync(join(state.dir, node.name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0])
  } catch {
    return undefined
  }
}

/** SIGKILL a node's Patroni, its postmaster and every PostgreSQL process under it, at once. */
function killNode (state, node) {
  const pids = []
  if (node.pid !== undefined && alive(node.pid)) pids.push(node.pid, ...childrenOf(node.pid))
  const pm = postmasterOf(state, node)
  if (pm !== undefined && alive(pm)) pids.push(pm, ...childrenOf(pm))
  for (const pid of new Set(pids)) {
    try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
  }
  node.pid = undefined
}

async function api (node, path) {
  const res = await fetch(`http://127.0.0.1:${node.apiPort}${path}`, { signal: AbortSignal.timeout(2000) })
  return res.json()
}

/** Patroni's view of the cluster (GET /cluster of any node that answers). */
async function clusterView (state) {
  for (const node of state.nodes) {
    if (node.pid === undefined) continue
    try { return await api(node, '/cluster') } catch { /* try the next */ }
  }
  return undefined
}

async function waitFor (what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const result = await check().catch(() => undefined)
    if (result) return result
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(200)
  }
}

function urlOf (state, names = state.nodes.map((n) => n.name)) {
  const hosts = state.nodes.filter((n) => names.includes(n.name)).map((n) => `127.0.0.1:${n.pgPort}`).join(',')
  return `postgres://postgres@${hosts}/postgres?target_session_attrs=read-write`
}

function handle (state) {
  const node = (name) => {
    const n = state.nodes.find((x) => x.name === name)
    if (n === undefined) throw new Error(`no node ${name}`)
    return n
  }
  const self = {
    dir: state.dir,
    url: urlOf(state),
    /** A single-host URL of each node, by name. */
    hostUrl: (name) => `postgres://postgres@127.0.0.1:${node(name).pgPort}/postgres`,
    nodes: state.nodes,
    view: () => clusterView(state),
    /** The leader's name (waits until there is one that runs). */
    leader: (timeoutMs = 60_000) => waitFor('a leader', async () => {
      const view = await clusterView(state)
      return view?.members?.find((m) => m.role === 'leader' && m.state === 'running')?.name
    }, timeoutMs),
    /** Waits until there is a leader and `standbys` standbys streaming from it (sync ones in synchronous mode). */
    waitReady: (standbys = state.nodes.length - 1, timeoutMs = 120_000) => waitFor(`a leader and ${standbys} standby(s)`, async () => {
      const view = await clusterView(state)
      const members = view?.members ?? []
      const leader = members.find((m) => m.role === 'leader' && m.state === 'running')
      const streaming = members.filter((m) => m.role !== 'leader' && (m.state === 'streaming' || m.state === 'running') && (!state.synchronous || m.role === 'sync_standby' || standbys === 0))
      if (leader === undefined || streaming.length < standbys) return undefined
      if (standbys === 0) return leader.name
      // Patroni 3.0 calls a standby `running` before it streams: ask the leader's PostgreSQL
      // (pg_stat_replication through Patroni's API), so a synchronous standby is one commits can reach.
      const status = await api(state.nodes.find((n) => n.name === leader.name), '/patroni')
      const live = (status.replication ?? []).filter((r) => r.state === 'streaming' && (!state.synchronous || r.sync_state === 'sync'))
      return live.length >= (state.synchronous ? 1 : standbys) ? leader.name : undefined
    }, timeoutMs),
    kill: (name) => { killNode(state, node(name)); saveState(state) },
    startNode: (name) => { startNodeProcess(state, node(name)); saveState(state) },
    /** Sends SIGSTOP/SIGCONT to a node's PostgreSQL processes (a standby that stops replaying). */
    pause: (name, on) => {
      const pm = postmasterOf(state, node(name))
      if (pm === undefined) return
      for (const pid of [pm, ...childrenOf(pm)]) {
        try { process.kill(pid, on ? 'SIGSTOP' : 'SIGCONT') } catch { /* gone */ }
      }
    },
    stop: () => stopCluster(state)
  }
  return self
}

function stopCluster (state) {
  if (state.stopped) return
  state.stopped = true
  for (const node of state.nodes) killNode(state, node)
  if (state.etcd.pid !== undefined) {
    try { process.kill(state.etcd.pid, 'SIGKILL') } catch { /* gone */ }
  }
  rmSync(state.dir, { recursive: true, force: true })
}

/**
 * Starts etcd and `nodes` Patroni nodes; resolves once a leader runs and every standby streams.
 * `synchronous`: Patroni's synchronous_mode. `archiveCommand`: instead of copying to DIR/archive.
 */
export async function startHaCluster ({ nodes = 2, synchronous = true, dir, archiveCommand, log = () => {}, stopOnExit = true } = {}) {
  const root = dir ?? mkdtempSync(join(tmpdir(), 'source-registry-ha-'))
  mkdirSync(join(root, 'archive'), { recursive: true })
  own(root)
  own(join(root, 'archive'))
  const state = {
    dir: root,
    synchronous,
    archiveCommand,
    etcd: { clientPort: await freePort(), peerPort: await freePort() },
    nodes: []
  }
  for (let i = 0; i < nodes; i++) state.nodes.push({ name: `pg${i}`, pgPort: await freePort(), apiPort: await freePort() })
  if (stopOnExit) process.once('exit', () => stopCluster(state))
  startEtcd(state)
  await waitFor('etcd', async () => (await fetch(`http://127.0.0.1:${state.etcd.clientPort}/health`)).ok, 30_000)
  log(`etcd on 127.0.0.1:${state.etcd.clientPort}`)
  // The first node alone, so it is the one that bootstraps; then the standbys copy it.
  startNodeProcess(state, state.nodes[0])
  const c = handle(state)
  await c.waitReady(0)
  for (const node of state.nodes.slice(1)) startNodeProcess(state, node)
  saveState(state)
  await c.waitReady()
  log(`Patroni cluster ready: ${c.url}`)
  return c
}

async function main () {
  const [command, ...rest] = process.argv.slice(2)
  const opt = (name) => { const i = rest.indexOf(name); return i < 0 ? undefined : rest[i + 1] }
  const positional = rest.filter((a, i) => !a.startsWith('--') && !(i > 0 && rest[i - 1]?.startsWith('--') && rest[i - 1] !== '--async'))
  const dir = opt('--dir')
  if (command === 'start') {
    const c = await startHaCluster({ dir, nodes: Number(opt('--nodes') ?? 2), synchronous: !rest.includes('--async'), stopOnExit: false, log: (m) => process.stderr.write(`${m}\n`) })
    process.stderr.write(`directory: ${c.dir} (stop: node deploy/patroni/cluster.mjs stop --dir ${c.dir})\n`)
    process.stdout.write(`DATABASE_URL=${c.url}\n`)
    return
  }
  if (dir === undefined) throw new Error('--dir DIR is needed (the directory `start` printed)')
  const c = handle(loadState(dir))
  if (command === 'stop') c.stop()
  else if (command === 'status') process.stdout.write(`${JSON.stringify(await c.view(), null, 2)}\n`)
  else if (command === 'kill') c.kill(positional[0])
  else if (command === 'start-node') c.startNode(positional[0])
  else throw new Error(`unknown command ${command}: start, status, kill NAME, start-node NAME, stop`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err) => { process.stderr.write(`${err.message}\n`); process.exit(1) })
}
