/**
 * The About tab's snippets for connecting clients, with this server's address and model filled
 * in. Each one uses the settings the README's Clients section gives for that client (tested there
 * by test/clients/), and test/web/ checks they still match the README and runs them against a
 * real server. `hasKeys`: the server wants a key, read here from MAYA_API_KEY.
 */
export interface Snippet {
  id: string;
  title: string;
  language: 'sh' | 'js' | 'toml';
  code: string;
}

export interface SnippetContext {
  /** e.g. http://127.0.0.1:8080 */
  origin: string;
  model: string;
  hasKeys: boolean;
  /** The server has MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on (Codex with thinking). */
  hasEncryptedReasoning: boolean;
}

const KEY_LINE = "const apiKey = process.env.MAYA_API_KEY || 'any-text';";

export function snippets({ origin, model, hasKeys, hasEncryptedReasoning }: SnippetContext): Snippet[] {
  const base = `${origin}/v1`;
  const q = (text: string) => `'${text.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
  const curlBody = JSON.stringify({ model, input: 'Hello', store: false, stream: true, max_output_tokens: 256 });
  return [
    {
      id: 'curl',
      title: 'curl',
      language: 'sh',
      code: [
        `curl ${origin}/v1/responses -H 'Content-Type: application/json' \\`,
        ...(hasKeys ? [`  -H "Authorization: Bearer $MAYA_API_KEY" \\`] : []),
        `  -d '${curlBody}'`,
      ].join('\n'),
    },
    {
      id: 'openai',
      title: 'OpenAI SDK (Node)',
      language: 'js',
      code: `import OpenAI from 'openai';

${KEY_LINE}
const client = new OpenAI({ baseURL: ${q(base)}, apiKey });
const first = await client.responses.create({ model: ${q(model)}, input: 'Remember the value 73', store: true });
const second = await client.responses.create({
  model: ${q(model)},
  previous_response_id: first.id,
  input: 'What value did I give you?',
  store: true,
});
console.log(second.output_text);
`,
    },
    {
      id: 'ai-sdk',
      title: 'Vercel AI SDK',
      language: 'js',
      code: `import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';

${KEY_LINE}
const openai = createOpenAI({ baseURL: ${q(base)}, apiKey });
const { text } = await generateText({
  model: openai(${q(model)}),
  prompt: 'Hello',
  providerOptions: { openai: { store: false } },
});
console.log(text);
`,
    },
    {
      id: 'langchain',
      title: 'LangChain.js',
      language: 'js',
      code: `import { ChatOpenAI } from '@langchain/openai';

${KEY_LINE}
const chat = new ChatOpenAI({ model: ${q(model)}, apiKey, configuration: { baseURL: ${q(base)} } });
const reply = await chat.invoke('Hello');
console.log(reply.content);
`,
    },
    {
      id: 'agents',
      title: 'OpenAI Agents SDK',
      language: 'js',
      code: `import OpenAI from 'openai';
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from '@openai/agents';

${KEY_LINE}
setDefaultOpenAIClient(new OpenAI({ baseURL: ${q(base)}, apiKey }));
setOpenAIAPI('responses');
setTracingDisabled(true);
const agent = new Agent({ name: 'Assistant', model: ${q(model)}, modelSettings: { store: true } });
const result = await run(agent, 'Hello');
console.log(result.finalOutput);
`,
    },
    {
      id: 'codex',
      title: 'Codex CLI ($CODEX_HOME/config.toml)',
      language: 'toml',
      code: codexConfig(base, model, hasKeys, hasEncryptedReasoning),
    },
  ];
}

function codexConfig(base: string, model: string, hasKeys: boolean, hasEncryptedReasoning: boolean): string {
  const thinking = hasEncryptedReasoning
    ? [
        'model_reasoning_effort = "medium"         # thinking on: this server has MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on',
        'model_reasoning_summary = "auto"          # accepted with that setting; no summary is made',
      ]
    : [
        'model_reasoning_effort = "none"           # thinking on needs MAYA_GLM_RESPONSES_ENCRYPTED_REASONING=on',
        'model_reasoning_summary = "none"',
      ];
  return [
    `model = "${model}"`,
    'model_provider = "maya"',
    ...thinking,
    'model_supports_reasoning_summaries = true # Codex does not know the model: ask for reasoning anyway',
    'web_search = "disabled"                   # hosted tools are refused',
    '[agents]',
    'enabled = false                           # sub-agent tools are a namespace tool, refused',
    '',
    '[model_providers.maya]',
    'name = "Maya"',
    `base_url = "${base}"`,
    'wire_api = "responses"',
    hasKeys
      ? 'env_key = "MAYA_API_KEY"'
      : '# env_key = "MAYA_API_KEY"                # when the server has MAYA_API_KEYS',
    '',
  ].join('\n');
}
