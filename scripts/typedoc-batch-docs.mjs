// TypeDoc plugin: a batch's helpers come from a mapped type over `Commands`
// (`BatchCommands<B>`), and TypeScript keeps no doc comments through a mapped type. This gives
// each undocumented batch helper the comment of the `Commands` method of the same name, plus
// what differs on a batch, so the reference documents every helper once, in one place.
import { Converter, ReflectionKind } from 'typedoc';

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    const project = context.project;
    const commands = project.getReflectionsByKind(ReflectionKind.Interface).find((r) => r.name === 'Commands');
    if (!commands) return;
    for (const batch of project.getReflectionsByKind(ReflectionKind.Class).filter((r) => r.name === 'Batch')) {
      for (const member of batch.children ?? []) {
        const source = commands.getChildByName(member.name);
        const from = source?.signatures?.[0]?.comment;
        if (!from) continue;
        for (const sig of member.signatures ?? []) {
          if (sig.comment) continue;
          const comment = from.clone();
          comment.summary = [...comment.summary, { kind: 'text', text: ' On a batch: queues the command and returns the batch; the reply is in `exec()`\'s result.' }];
          comment.blockTags = comment.blockTags.filter((t) => t.tag !== '@returns');
          sig.comment = comment;
        }
      }
    }
  });
}
