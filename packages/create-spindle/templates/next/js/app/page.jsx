import Counter from './counter.jsx'

export default function Home () {
  return (
    <>
      <h1>{{name}}</h1>
      <p>Next.js inside Fastify, on worker threads that share one port and one cache.</p>
      <Counter />
    </>
  )
}
