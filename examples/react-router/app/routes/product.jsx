import { data, useLoaderData } from 'react-router'

export function loader ({ params }) {
  const id = Number(params.id)
  if (!Number.isInteger(id) || id < 1 || id > 200) throw data('No such product', { status: 404 })
  return { id, name: `Product ${id}`, description: `Everything about product ${id}.` }
}

export default function Product () {
  const p = useLoaderData()
  return <main><h1>{p.name}</h1><p>{p.description}</p></main>
}
