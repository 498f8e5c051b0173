import Counter from './counter.jsx'

export default function Home () {
  return (
    <>
      <h1>Next.js on every core</h1>
      <p>This app runs inside Fastify, on worker threads that share one port.</p>
      <Counter />
    </>
  )
}
