/**
 * compose/*.yml are for people who run `docker compose` themselves (the test harness starts
 * its containers with testcontainers instead, so nothing else runs these files). This checks
 * what a wrong edit would break for them: the files parse, every `extends` and `depends_on`
 * names a service that exists, every service ends up on the host network (which the
 * announced addresses rely on), and every variable the files read is documented in
 * compose/README.md with the same default.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const DIR = fileURLToPath(new URL('../../compose/', import.meta.url));
const FILES = ['common.yml', 'standalone.yml', 'sentinel.yml', 'cluster.yml'] as const;
const TOPOLOGIES = ['standalone.yml', 'sentinel.yml', 'cluster.yml'] as const;

interface Service {
  image?: string;
  network_mode?: string;
  extends?: { file: string; service: string };
  depends_on?: Record<string, { condition: string }> | string[];
  command?: string[];
  healthcheck?: { test: string[] };
  profiles?: string[];
}

const text = (file: string): string => readFileSync(`${DIR}${file}`, 'utf8');
const services = (file: string): Record<string, Service> =>
  (parse(text(file), { strict: true, uniqueKeys: true, prettyErrors: true }) as { services: Record<string, Service> }).services;

/** `${NAME:-default}` / `${NAME}` as compose interpolates them (`$$` is a literal `$` for the container's shell). */
function variables(source: string): Map<string, string | undefined> {
  const vars = new Map<string, string | undefined>();
  for (const m of source.matchAll(/(?<!\$)\$\{([A-Z0-9_]+)(?::-([^}]*))?\}/g)) vars.set(m[1]!, m[2]);
  return vars;
}

describe('compose/*.yml', () => {
  it.each(FILES)('%s parses as YAML with a services map', (file) => {
    const s = services(file);
    expect(Object.keys(s).length).toBeGreaterThan(0);
  });

  it.each(TOPOLOGIES)('%s: every service extends an existing base service or names an image, and runs on the host network', (file) => {
    for (const [name, svc] of Object.entries(services(file))) {
      const base = svc.extends ? services(svc.extends.file)[svc.extends.service] : undefined;
      if (svc.extends) expect(base, `${file}: ${name} extends ${svc.extends.file}#${svc.extends.service}`).toBeDefined();
      expect(svc.image ?? base?.image, `${file}: ${name} has no image`).toMatch(/^\$\{REDIS_IMAGE:-redis:7/);
      expect(svc.network_mode ?? base?.network_mode, `${file}: ${name}`).toBe('host');
    }
  });

  it.each(TOPOLOGIES)('%s: every depends_on names a service of the same file', (file) => {
    const s = services(file);
    for (const [name, svc] of Object.entries(s)) {
      const deps = Array.isArray(svc.depends_on) ? svc.depends_on : Object.keys(svc.depends_on ?? {});
      for (const d of deps) expect(Object.keys(s), `${file}: ${name} depends on ${d}`).toContain(d);
    }
  });

  it('the base services start redis-server / redis-sentinel from a config in /data and have a health check', () => {
    const base = services('common.yml');
    expect(Object.keys(base).sort()).toEqual(['data-node', 'sentinel']);
    expect(base['data-node']!.command!.join('\n')).toMatch(/exec redis-server "\$\$conf"/);
    expect(base.sentinel!.command!.join('\n')).toMatch(/exec redis-sentinel "\$\$conf"/);
    for (const svc of Object.values(base)) expect(svc.healthcheck!.test.join('\n')).toMatch(/redis-cli -p "\$\$PORT" ping/);
  });

  it('every variable the files read is documented in compose/README.md, with the same default', () => {
    const readme = text('README.md');
    const all = new Map<string, string | undefined>();
    for (const f of FILES) for (const [k, v] of variables(text(f))) all.set(k, v);
    expect(all.size).toBeGreaterThan(10);
    for (const [name, dflt] of all) {
      expect(readme, `${name} is not in compose/README.md`).toContain(`\`${name}`);
      // Port defaults are listed as NAME=default in the README's table; the image default in words.
      if (name.endsWith('_PORT') || /^CLUSTER_PORT_\d$/.test(name)) expect(readme).toContain(`${name}=${dflt}`);
      if (name === 'REDIS_IMAGE') expect(readme).toContain(`default \`${dflt}\``);
    }
  });
});
